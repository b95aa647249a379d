import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { lowdbStore } from '../../../store/folder/lowdb-store.ts';
import { ofType, receivedCalls, waitForRecord } from './mcp-run.ts';
import { compileCache, readRecords, tempDir } from './mcp-servers.ts';

const childFile = fileURLToPath(new URL('./mcp-agent-child.ts', import.meta.url));

/**
 * Runs the agent child; `killWhen` resolving SIGKILLs it, once its output also holds
 * `killAfterLine` (the child prints each fact after the runtime hands it over, which on a busy
 * machine can come after the tool's effect began). Resolves with its output and end.
 */
function runAgent(options: object, killWhen?: Promise<unknown>, killAfterLine?: string) {
  const child = spawn(process.execPath, [childFile, JSON.stringify({ ...options, compileCache })], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, NODE_COMPILE_CACHE: compileCache },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  killWhen?.then(async () => {
    while (killAfterLine !== undefined && !stdout.includes(killAfterLine)) {
      if (child.exitCode !== null || child.signalCode !== null) return;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    child.kill('SIGKILL');
  });
  return new Promise<{
    stdout: string;
    stderr: string;
    code: number | null;
    signal: string | null;
  }>((resolve) => child.on('close', (code, signal) => resolve({ stdout, stderr, code, signal })));
}

describe('an MCP call when the agent process is SIGKILLed mid-call', () => {
  it('is indeterminate after recovery and never sent to the server again', async () => {
    const dir = tempDir();
    const sideFile = path.join(dir, 'server.jsonl');
    const options = { dir: path.join(dir, 'log'), sideFile };

    // Killed once the server's handler is running the call.
    const first = await runAgent(
      { ...options, mode: 'start' },
      waitForRecord(sideFile, (record) => record.handler === 'slow_write'),
      'fact tool.started call_1\n',
    );
    expect(first.signal).toBe('SIGKILL');
    expect(first.stdout).toContain('fact tool.started call_1\n');
    expect(first.stdout).not.toContain('tool.settled');

    const second = await runAgent({ ...options, mode: 'recover' });
    expect(second.stderr).toBe('');
    expect(second.code).toBe(0);
    expect(second.stdout).toContain('recovered parked call_1\n');
    expect(second.stdout.trimEnd().split('\n').at(-1)).toBe('ended completed end_turn');

    const store = lowdbStore({ dir: options.dir });
    const facts = await store.read('mcp-crash');
    await store.close();
    expect(ofType(facts, 'tool.started').map((fact) => [fact.callId, fact.name])).toEqual([
      ['call_1', 'slow_write'],
    ]);
    expect(ofType(facts, 'tool.indeterminate').map((fact) => fact.callId)).toEqual(['call_1']);
    expect(ofType(facts, 'tool.settled').map((fact) => [fact.callId, fact.outcome])).toEqual([
      ['call_1', 'unknown'],
    ]);
    // Both server processes (the killed agent's and the recovering one's) write the side file.
    expect(receivedCalls(readRecords(sideFile))).toEqual([['slow_write', { name: 'draft' }]]);
  });
});
