import { mkdirSync, mkdtempSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { FactOf, RunLimits } from '../../../events/facts.ts';
import type { JsonValue } from '../../../events/json.ts';
import { createCallSettler } from '../../../tools/call-settler.ts';
import type { ToolSet } from '../../../tools/tool.ts';
import { createToolLog, decideCall, decisionOf, provenCall } from './tool-log.ts';

/**
 * Settles one proven call of `name` through the real tool runtime, answering a permission
 * request with a user `allow`. Returns the settlement and the log.
 */
export async function callTool(
  tools: ToolSet,
  name: string,
  input: JsonValue,
  limits: Partial<RunLimits> = { toolOutputChars: 100_000 },
) {
  const runtime = createCallSettler({ tools });
  const log = createToolLog({ limits });
  const call = provenCall(name, input);
  await log.completeStep('step_1', [call]);
  await decideCall(runtime, call, log.context('step_1'));
  const [requested] = log.ofType('tool.permission.requested');
  const decision =
    requested === undefined
      ? decisionOf(log.facts(), call.callId)
      : { decision: 'allow' as const, inputHash: requested.inputHash, by: 'user' as const };
  if (decision !== undefined) await runtime.run(call, decision, log.context('step_1'));
  const [settled] = log.ofType('tool.settled');
  if (settled === undefined) throw new Error(`callTool: ${name} did not settle`);
  return { settled: settled as FactOf<'tool.settled'>, log, requested };
}

/** A fresh temp directory with `root/` (the workspace) and `outside/` beside it, realpath'd. */
export function tempWorkspace() {
  const base = realpathSync(mkdtempSync(path.join(tmpdir(), 'turnlog-tools-')));
  const root = path.join(base, 'root');
  const outside = path.join(base, 'outside');
  mkdirSync(root);
  mkdirSync(outside);
  return { base, root, outside };
}

/**
 * `tempWorkspace` with `root/dir/file.txt` ("inside") and a twin `outside/dir/file.txt`
 * ("OUTSIDE SECRET"), for tests that swap `root/dir` for a symlink to `outside/dir`.
 */
export function twinWorkspace() {
  const workspace = tempWorkspace();
  mkdirSync(path.join(workspace.root, 'dir'));
  mkdirSync(path.join(workspace.outside, 'dir'));
  writeFileSync(path.join(workspace.root, 'dir', 'file.txt'), 'inside\n');
  writeFileSync(path.join(workspace.outside, 'dir', 'file.txt'), 'OUTSIDE SECRET\n');
  return workspace;
}
