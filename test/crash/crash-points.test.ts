import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type Fact, factsOfType } from '../../events/facts.ts';
import {
  type KillRule,
  printedHistory,
  readExecutions,
  readLog,
  readRequestCount,
  recoveredLine,
  runChild,
} from './crash-harness.ts';
import { finalViolations } from './crash-invariants.ts';
import { allCallIds, type ChildOptions, finalText } from './crash-scenario.ts';

/**
 * Issue 5's crash points: one child process per case runs the crash scenario on a lowdbStore
 * and is SIGKILLed at one precise point; a second process recovers it and the run must end
 * correctly, with no started tool executed again and exactly one run.ended.
 */

interface CrashPoint {
  name: string;
  /** How the first child differs from a plain run, so the kill lands at the point. */
  first: Partial<ChildOptions>;
  killWhen: () => KillRule;
  /** The last fact of the log after the kill. */
  lastFact: { type?: Fact['type']; state: string; callId?: string };
  /** What the second child's `recover()` reported. */
  recovered: { status: string; interruptedIn: string; indeterminate: string[] };
  /** Calls the first process executed (each exactly once, none again by the second). */
  executedByFirst: string[];
  /** Calls started but never executed (indeterminate after the kill, so never run again). */
  neverExecuted?: string[];
  /** `step.started` attempts of each step, in order. */
  attempts: number[][];
  /** `retry.due` facts in the final log (a kill in the backoff leaves it to recovery). */
  retriesDue: number;
  /** Attempts whose `step.started` is in the log but whose request was never sent. */
  unsent?: number;
  /** `run.recovered` facts in the final log (default 1; none when only `run.ended` was missing). */
  recoveries?: number;
}

const onLine =
  (pattern: RegExp): (() => KillRule) =>
  () =>
  (line) =>
    pattern.test(line) ? 0 : undefined;

const plainAttempts = [[1], [1], [1, 2], [1]];

const points: CrashPoint[] = [
  {
    name: 'after step.started (durable, request not sent)',
    first: { hold: { type: 'step.started' } },
    killWhen: onLine(/^hold \d+ step\.started$/),
    lastFact: { type: 'step.started', state: 'requesting.streaming' },
    recovered: { status: 'resumed', interruptedIn: 'requesting.streaming', indeterminate: [] },
    executedByFirst: [],
    attempts: [[1, 2], [1], [1, 2], [1]],
    retriesDue: 1,
    unsent: 1,
  },
  {
    name: 'mid-stream (after the first text delta)',
    first: { stallStream: true },
    killWhen: onLine(/^delta$/),
    lastFact: { type: 'step.started', state: 'requesting.streaming' },
    recovered: { status: 'resumed', interruptedIn: 'requesting.streaming', indeterminate: [] },
    executedByFirst: [],
    attempts: [[1, 2], [1], [1, 2], [1]],
    retriesDue: 1,
  },
  {
    name: "after step.completed, its calls' decisions and their starts (one write; none executed)",
    first: { hold: { type: 'step.completed' } },
    killWhen: onLine(/^hold \d+ step\.completed$/),
    lastFact: { type: 'tool.started', state: 'settlingTools.running', callId: 'call_1b' },
    // The cost of starting calls in the response's write: a crash before execute leaves them
    // indeterminate although they never ran (as a crash between tool.started and execute did).
    recovered: {
      status: 'parked',
      interruptedIn: 'settlingTools.running',
      indeterminate: ['call_1a', 'call_1b'],
    },
    executedByFirst: [],
    neverExecuted: ['call_1a', 'call_1b'],
    attempts: plainAttempts,
    retriesDue: 1,
  },
  {
    name: "a write cut after its calls' decisions (their starts lost; none started)",
    first: { hold: { type: 'tool.permission.decided', callId: 'call_1b', cut: true } },
    killWhen: onLine(/^hold \d+ tool\.permission\.decided$/),
    lastFact: {
      type: 'tool.permission.decided',
      state: 'settlingTools.running',
      callId: 'call_1b',
    },
    recovered: { status: 'resumed', interruptedIn: 'settlingTools.running', indeterminate: [] },
    executedByFirst: [],
    attempts: plainAttempts,
    retriesDue: 1,
  },
  {
    name: 'a write cut after step.completed (its decisions lost)',
    first: { hold: { type: 'step.completed', cut: true } },
    killWhen: onLine(/^hold \d+ step\.completed$/),
    lastFact: { type: 'step.completed', state: 'settlingTools.deciding' },
    recovered: { status: 'resumed', interruptedIn: 'settlingTools.deciding', indeterminate: [] },
    executedByFirst: [],
    attempts: plainAttempts,
    retriesDue: 1,
  },
  {
    name: 'a write cut between the last step.completed and run.ended',
    first: { hold: { type: 'step.completed', nth: 4, cut: true } },
    killWhen: onLine(/^hold \d+ step\.completed$/),
    lastFact: { type: 'step.completed', state: 'terminal' },
    recovered: { status: 'ended', interruptedIn: 'terminal', indeterminate: [] },
    executedByFirst: ['call_1a', 'call_1b', 'call_2a', 'call_2b', 'call_3a'],
    attempts: plainAttempts,
    retriesDue: 1,
    recoveries: 0,
  },
  {
    name: 'after tool.started (both tools sleeping)',
    first: { toolMs: 60_000 },
    killWhen: () => {
      let executions = 0;
      return (line) => (line.startsWith('exec ') && ++executions === 2 ? 0 : undefined);
    },
    lastFact: { type: 'tool.started', state: 'settlingTools.running' },
    recovered: {
      status: 'parked',
      interruptedIn: 'settlingTools.running',
      indeterminate: ['call_1a', 'call_1b'],
    },
    executedByFirst: ['call_1a', 'call_1b'],
    attempts: plainAttempts,
    retriesDue: 1,
  },
  {
    name: 'after tool.settled (the last call of step 3)',
    first: { hold: { type: 'tool.settled', callId: 'call_3a' } },
    killWhen: onLine(/^hold \d+ tool\.settled$/),
    lastFact: { type: 'tool.settled', state: 'projecting', callId: 'call_3a' },
    recovered: { status: 'resumed', interruptedIn: 'projecting', indeterminate: [] },
    executedByFirst: ['call_1a', 'call_1b', 'call_2a', 'call_2b', 'call_3a'],
    attempts: plainAttempts,
    retriesDue: 1,
  },
  {
    name: 'while awaitingPermission (deploy asked, nobody answered)',
    first: { holdPermission: true },
    killWhen: onLine(/^fact \d+ \S+ awaitingPermission/),
    lastFact: { state: 'awaitingPermission' },
    recovered: { status: 'parked', interruptedIn: 'awaitingPermission', indeterminate: [] },
    executedByFirst: ['call_1a', 'call_1b'],
    attempts: plainAttempts,
    retriesDue: 1,
  },
  {
    name: 'during the retry backoff (after a 429)',
    first: { retryAfterMs: 60_000 },
    killWhen: onLine(/^fact \d+ step\.failed requesting\.backingOff$/),
    lastFact: { type: 'step.failed', state: 'requesting.backingOff' },
    recovered: { status: 'resumed', interruptedIn: 'requesting.backingOff', indeterminate: [] },
    executedByFirst: ['call_1a', 'call_1b', 'call_2a', 'call_2b'],
    attempts: plainAttempts,
    retriesDue: 0,
  },
];

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function scenarioDir(): Omit<ChildOptions, 'mode'> {
  const dir = mkdtempSync(path.join(tmpdir(), 'turnlog-crash-point-'));
  dirs.push(dir);
  return {
    dir: path.join(dir, 'store'),
    sessionId: 'crash-point',
    sideFile: path.join(dir, 'executions.log'),
    requestFile: path.join(dir, 'requests.log'),
    markerFile: path.join(dir, 'failed-once'),
    toolMs: 5,
    chunkMs: 1,
    retryAfterMs: 5,
  };
}

describe('a run SIGKILLed at a crash point and recovered by a new process', () => {
  it.each(points)('$name', async (point) => {
    const base = scenarioDir();
    const first = await runChild({ ...base, ...point.first, mode: 'start' }, point.killWhen());
    expect(first.killed, first.stderr).toBe(true);
    const before = await readLog(base.dir, base.sessionId);
    expect(before.at(-1)).toMatchObject(point.lastFact);
    const startedBefore = factsOfType(before, 'tool.started').map((fact) => fact.callId);

    const second = await runChild({ ...base, mode: 'recover' });
    expect(second.code, second.stderr).toBe(0);
    expect(recoveredLine(second)).toEqual(point.recovered);
    expect(second.lines).toContain('ended completed end_turn');

    const facts = await readLog(base.dir, base.sessionId);
    const executions = readExecutions(base.sideFile);
    const requests = readRequestCount(base.requestFile);
    expect(finalViolations(facts, executions, requests, printedHistory(second))).toEqual([]);
    expect(factsOfType(facts, 'run.ended')).toMatchObject([
      { status: 'completed', reason: 'end_turn' },
    ]);
    expect(factsOfType(facts, 'step.completed').at(-1)?.content).toEqual([
      { type: 'text', text: finalText },
    ]);
    // Every call executed exactly once; a call started before the kill, by the first process only.
    const byFirst = executions.filter((execution) => execution.pid === first.pid);
    const bySecond = executions.filter((execution) => execution.pid === second.pid);
    expect(executions).toHaveLength(byFirst.length + bySecond.length);
    expect(byFirst.map((execution) => execution.callId).sort()).toEqual(point.executedByFirst);
    expect(bySecond.map((execution) => execution.callId).sort()).toEqual(
      allCallIds.filter(
        (callId) =>
          !point.executedByFirst.includes(callId) && !point.neverExecuted?.includes(callId),
      ),
    );
    expect(bySecond.filter((execution) => startedBefore.includes(execution.callId))).toEqual([]);
    const unknown = factsOfType(facts, 'tool.settled').filter((fact) => fact.outcome !== 'success');
    expect(unknown.map((fact) => [fact.callId, fact.outcome])).toEqual(
      point.recovered.indeterminate.map((callId) => [callId, 'unknown']),
    );
    const attempts = new Map<string, number[]>();
    for (const fact of factsOfType(facts, 'step.started')) {
      attempts.set(fact.stepId, [...(attempts.get(fact.stepId) ?? []), fact.attempt]);
    }
    expect([...attempts.values()]).toEqual(point.attempts);
    expect(factsOfType(facts, 'retry.due')).toHaveLength(point.retriesDue);
    expect(factsOfType(facts, 'run.recovered')).toHaveLength(point.recoveries ?? 1);
    // I2: every request was sent after its own step.started; only a held one was never sent.
    expect(requests).toBe(factsOfType(facts, 'step.started').length - (point.unsent ?? 0));
  });
});
