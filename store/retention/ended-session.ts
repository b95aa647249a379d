import type { Fact } from '../../events/facts.ts';
import { StoreInputError } from '../event-store.ts';
import { cloneJson } from '../plain-json.ts';
import { SessionLog, storedFactProblem } from '../session-log.ts';
import type { EndedSession } from '../session-retention.ts';

/**
 * Whether retention may remove a session, from what every store knows cheaply of it (its last
 * `seq`, its open runs, its last fact): no run open, and the last fact a `run.ended` before
 * `endedBefore`. A run's last fact is its `run.ended` (I7), so when no run is open the session's
 * last fact is the `run.ended` of its last run to end. Anything else (a last fact that is not a
 * `run.ended`, an `at` that is not a time) keeps the session: retention never guesses.
 */
export function endedSessionOf(options: {
  sessionId: string;
  lastSeq: number;
  openRuns: number;
  /** The session's last fact (only its `type` and `at` are read). */
  lastFact: Pick<Fact, 'type' | 'at'> | undefined;
  endedBefore: Date;
}): EndedSession | undefined {
  const { sessionId, lastSeq, openRuns, lastFact, endedBefore } = options;
  if (openRuns > 0 || lastFact === undefined || lastFact.type !== 'run.ended') return undefined;
  const endedAtMs = Date.parse(lastFact.at);
  if (!(endedAtMs < endedBefore.getTime())) return undefined;
  return { sessionId, lastSeq, endedAt: lastFact.at };
}

/** Checks `endedBefore`: a `Date` holding a time (never the store's clock: the caller's). */
export function checkEndedBefore(value: unknown, where: string): asserts value is Date {
  if (!(value instanceof Date) || Number.isNaN(value.getTime())) {
    throw new StoreInputError({
      message: `${where}: endedBefore must be a valid Date (sessions whose last run ended before it may go), got ${String(value)}`,
      sessionId: undefined,
    });
  }
}

/**
 * A whole session's stored facts as a `SessionLog`, checked as every store checks a log it
 * loads: each fact valid and in its place (`seq` 1, 2, 3, …, this session), no id twice, nothing
 * after a run's `run.ended`. Returns the first problem (and the fact's index) instead.
 */
export function restoreSessionLog(options: {
  sessionId: string;
  facts: readonly unknown[];
  storeName: string;
}): { log: SessionLog; problem?: undefined } | { problem: string; index: number } {
  const { sessionId, facts, storeName } = options;
  const log = new SessionLog({ sessionId, storeName });
  for (const [index, fact] of facts.entries()) {
    const problem =
      storedFactProblem(fact, { sessionId, seq: index + 1 }) ?? log.restore(fact as Fact);
    if (problem !== undefined) return { problem, index };
  }
  return { log };
}

/**
 * `restoreSessionLog` for a store's `importFacts`: the checked log, or `StoreInputError` naming
 * the first fact at fault (nothing is imported).
 */
export function importedLog(options: {
  sessionId: string;
  facts: readonly Fact[];
  storeName: string;
}): SessionLog {
  const { sessionId, storeName } = options;
  const facts = options.facts.map(cloneJson);
  const restored = restoreSessionLog({ sessionId, facts, storeName });
  if (restored.problem === undefined) return restored.log;
  throw new StoreInputError({
    message: `${storeName}.importFacts('${sessionId}'): fact ${restored.index}: ${restored.problem}; nothing was imported`,
    sessionId,
    factIndex: restored.index,
  });
}
