import type { Fact, ToolOutcome } from '../events/facts.ts';
import { hashJson, type JsonValue } from '../events/json.ts';

/** How many identical failures in a row close the gate for the next identical call. */
export const loopGateFailures = 2;

/** One earlier settled call of a tool, with the hash of the input it was judged on. */
interface SettledCall {
  outcome: ToolOutcome;
  inputHash: string;
}

/** What the gate keeps of one run while it reads the log: only what the next question needs. */
interface RunState {
  /** Raw inputs of the latest `step.completed`'s calls (hashed only when one settles `invalid`). */
  rawInputs: Map<string, JsonValue>;
  validatedHashes: Map<string, string>;
  startedHashes: Map<string, string>;
  /** The latest settled calls of each tool, oldest first (at most `loopGateFailures`). */
  recent: Map<string, SettledCall[]>;
}

/** How far the gate has read one run in one facts array, and what it found. */
interface Cursor {
  read: number;
  /** The last fact read: a different one at that index means the array is not the one read. */
  last: Fact | undefined;
  run: RunState;
}

/** The loop gate's question: may this call run, or did the identical call fail twice in a row? */
export interface LoopGate {
  /**
   * True when the two most recent settled calls of tool `name` in run `runId` (log order) both
   * had exactly `inputHash` and both failed (`error` or `invalid`), so a third identical call is
   * refused without running. The gate's own refusals are skipped, so the identical call stays
   * refused until a different call of the tool settles.
   *
   * A settled call's hash is the validated input's (`tool.started`, else the permission facts);
   * an `invalid` call never had a validated input, so its hash is the raw input's.
   */
  isRepeatedFailure(question: {
    facts: readonly Fact[];
    runId: string;
    name: string;
    inputHash: string;
  }): boolean;
}

/**
 * A loop gate that reads each run of each facts array once: it remembers how far it read (a run
 * driver's log only grows), starts at the run's `run.started` and reads only the facts appended
 * since, so asking costs the same on top of 10,000 facts as on top of 10. An array that no
 * longer holds what was read (a copy, a different log) is read again.
 *
 * @example
 * const gate = createLoopGate();
 * gate.isRepeatedFailure({ facts, runId, name: 'make', inputHash }); // true after two identical failures
 */
export function createLoopGate(): LoopGate {
  const cursors = new WeakMap<readonly Fact[], Map<string, Cursor>>();

  function runState(facts: readonly Fact[], runId: string): RunState {
    let runs = cursors.get(facts);
    if (runs === undefined) {
      runs = new Map();
      cursors.set(facts, runs);
    }
    let cursor = runs.get(runId);
    if (
      cursor === undefined ||
      facts.length < cursor.read ||
      (cursor.read > 0 && facts[cursor.read - 1] !== cursor.last)
    ) {
      cursor = { read: runStart(facts, runId), last: undefined, run: emptyRun() };
      runs.set(runId, cursor);
    }
    for (; cursor.read < facts.length; cursor.read += 1) {
      const fact = facts[cursor.read] as Fact;
      if (fact.runId === runId) observe(cursor.run, fact);
      cursor.last = fact;
    }
    return cursor.run;
  }

  return {
    isRepeatedFailure({ facts, runId, name, inputHash }) {
      const recent = runState(facts, runId).recent.get(name) ?? [];
      return (
        recent.length === loopGateFailures &&
        recent.every(
          (call) =>
            call.inputHash === inputHash &&
            (call.outcome === 'error' || call.outcome === 'invalid'),
        )
      );
    },
  };
}

/** Where run `runId` begins in `facts`: its `run.started`, found from the end (else the start). */
function runStart(facts: readonly Fact[], runId: string): number {
  for (let index = facts.length - 1; index >= 0; index -= 1) {
    const fact = facts[index] as Fact;
    if (fact.type === 'run.started' && fact.runId === runId) return index;
  }
  return 0;
}

function emptyRun(): RunState {
  return {
    rawInputs: new Map(),
    validatedHashes: new Map(),
    startedHashes: new Map(),
    recent: new Map(),
  };
}

function observe(run: RunState, fact: Fact): void {
  // Tool facts refer to the call ids of the latest step.completed: a step's calls all settle
  // before the next request (I6), and call ids repeat across steps.
  if (fact.type === 'step.completed') {
    run.rawInputs = new Map(fact.toolCalls.map((call) => [call.callId, call.input]));
    run.validatedHashes = new Map();
    run.startedHashes = new Map();
  } else if (fact.type === 'tool.permission.requested' || fact.type === 'tool.permission.decided') {
    run.validatedHashes.set(fact.callId, fact.inputHash);
  } else if (fact.type === 'tool.started') {
    run.startedHashes.set(fact.callId, fact.inputHash);
  } else if (fact.type === 'tool.settled') {
    const validatedHash =
      run.startedHashes.get(fact.callId) ?? run.validatedHashes.get(fact.callId);
    // The gate's own refusal (denied before any permission fact) must not end the streak it
    // enforces, or every third identical failing call would run again.
    if (fact.outcome === 'denied' && validatedHash === undefined) return;
    const inputHash =
      fact.outcome === 'invalid' || validatedHash === undefined
        ? rawHash(run, fact.callId)
        : validatedHash;
    const recent = [...(run.recent.get(fact.name) ?? []), { outcome: fact.outcome, inputHash }];
    run.recent.set(fact.name, recent.slice(-loopGateFailures));
  }
}

function rawHash(run: RunState, callId: string): string {
  return run.rawInputs.has(callId) ? hashJson(run.rawInputs.get(callId)) : '';
}
