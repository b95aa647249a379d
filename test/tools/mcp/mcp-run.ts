import { watch } from 'node:fs';
import path from 'node:path';
import { type ScriptedStep, scriptedModel } from '../../../adapters/scripted-model.ts';
import type { Fact, FactOf, RunLimits } from '../../../events/facts.ts';
import type { PendingDecision } from '../../../events/project-turn.ts';
import { memoryStore } from '../../../store/memory/memory-store.ts';
import type { ToolsOption } from '../../../tools/tool-set-source.ts';
import { testRuntime } from '../../runtime/runtime-helpers.ts';
import { readRecords, type ServerRecord } from './mcp-servers.ts';

/** How a test answers each permission ask. */
export type Answer = (pending: PendingDecision) => 'allow' | 'deny';

/**
 * Runs one turn of a scripted model over `tools` on a memory store, answering every permission
 * ask with `answer` (default: allow). Returns the run's facts and its outcome.
 */
export async function runTurn({
  tools,
  script,
  answer = () => 'allow',
  limits,
  onFact,
}: {
  tools: ToolsOption;
  script: ScriptedStep[];
  answer?: Answer;
  limits?: Partial<RunLimits>;
  onFact?: (fact: Fact, runtime: ReturnType<typeof testRuntime>) => void;
}) {
  const runtime = testRuntime(memoryStore(), {
    model: scriptedModel(script),
    tools,
    ...(limits ? { limits } : {}),
  });
  const turn = await runtime.send({ sessionId: 's1', text: 'go' });
  for await (const event of turn.events) {
    if (!('seq' in event)) continue;
    onFact?.(event, runtime);
    if (event.state !== 'awaitingPermission') continue;
    for (const pending of await runtime.pending('s1')) {
      await runtime.decide({
        sessionId: 's1',
        callId: pending.callId,
        decision: answer(pending),
        inputHash: pending.inputHash,
      });
    }
  }
  const outcome = await turn.done;
  const facts = await runtime.facts('s1');
  await runtime.close();
  return { facts, outcome };
}

/** The facts of one type. */
export function ofType<TType extends Fact['type']>(facts: Fact[], type: TType): FactOf<TType>[] {
  return facts.filter((fact): fact is FactOf<TType> => fact.type === type);
}

/**
 * `[name, outcome, text]` of every settlement, in the order the model made the calls (calls of
 * one step run concurrently, so they may settle in any order).
 */
export const settlements = (facts: Fact[]) =>
  ofType(facts, 'tool.settled')
    .sort((a, b) => callNumber(a.callId) - callNumber(b.callId))
    .map((fact) => [fact.name, fact.outcome, fact.text]);

/** `call_12` → 12: the scripted model numbers its calls across the whole script. */
const callNumber = (callId: string) => Number(callId.replace(/^call_/, ''));

/** The `tools/call` requests the test server received: `[name, arguments]`. */
export const receivedCalls = (records: ServerRecord[]) =>
  records.flatMap((record) =>
    record.received === 'tools/call' ? [[record.name, record.arguments]] : [],
  );

/**
 * Resolves once the side file holds a record matching `match` (watching the file, not polling
 * on a timer). The test's own timeout bounds the wait.
 */
export function waitForRecord(
  sideFile: string,
  match: (record: ServerRecord) => boolean,
): Promise<ServerRecord> {
  return new Promise((resolve) => {
    const check = () => {
      const found = readRecords(sideFile).find(match);
      if (found === undefined) return false;
      watcher.close();
      resolve(found);
      return true;
    };
    // The directory, not the file: the server creates the file with its first record.
    const watcher = watch(path.dirname(sideFile), () => check());
    check();
  });
}
