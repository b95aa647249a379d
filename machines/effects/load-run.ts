import type { Fact, FactOf, RunLimits } from '../../events/facts.ts';
import { planRecovery, type RunRecovery } from '../../events/plan-recovery.ts';
import { type EventStore, StoreCorruptionError } from '../../store/event-store.ts';
import { type RehydratedRun, ReplayDivergenceError, rehydrateRun } from '../pure/rehydrate.ts';
import type { TurnMachine } from '../pure/turn-machine.ts';

/** An unfinished run that cannot be resumed, and why. */
export interface DamagedRun {
  sessionId: string;
  /** `undefined` when the session could not be read far enough to name its run. */
  runId: string | undefined;
  interruptedIn: string | undefined;
  /** What is wrong, in words. */
  damage: string[];
}

/** An unfinished run rebuilt from its session's log, ready to resume. */
export interface LoadedRun {
  ids: { sessionId: string; turnId: string; runId: string };
  /** The session's facts. */
  facts: Fact[];
  plan: RunRecovery;
  rehydrated: RehydratedRun & { limits: RunLimits };
}

/**
 * Reads a session and rebuilds its unfinished run (`runId`, else its last one) for resuming, or
 * says why that run cannot be resumed: the store cannot read the session
 * (`StoreCorruptionError`), the run's facts break the log's rules (`planRecovery`'s damage), or
 * the turn machine cannot rebuild it (`rehydrateRun`'s `ReplayDivergenceError`). Damage is
 * reported, never repaired, and nothing is written. `undefined` when there is no such unfinished
 * run.
 */
export async function loadRun({
  store,
  machine,
  sessionId,
  runId,
}: {
  store: EventStore;
  machine: TurnMachine;
  sessionId: string;
  runId: string | undefined;
}): Promise<LoadedRun | DamagedRun | undefined> {
  const damaged = (id: string | undefined, damage: string[], interruptedIn?: string) => ({
    sessionId,
    runId: id,
    interruptedIn,
    damage,
  });
  let facts: Fact[];
  try {
    facts = await store.read(sessionId);
  } catch (error) {
    if (StoreCorruptionError.isInstance(error)) return damaged(runId, [error.message]);
    throw error;
  }
  const target = runId ?? unfinishedRun(facts)?.runId;
  const plan = planRecovery(facts).runs.find((candidate) => candidate.runId === target);
  if (target === undefined || plan === undefined) return undefined;
  if (plan.damage.length > 0) {
    return damaged(
      target,
      plan.damage.map((damage) => damage.message),
      plan.interruptedIn,
    );
  }
  try {
    const rehydrated = rehydrateRun(facts, target, machine);
    const started = rehydrated.facts[0] as FactOf<'run.started'>;
    const ids = { sessionId, turnId: plan.turnId, runId: target };
    return { ids, facts, plan, rehydrated: { ...rehydrated, limits: started.limits } };
  } catch (error) {
    if (ReplayDivergenceError.isInstance(error)) {
      return damaged(target, [error.message], plan.interruptedIn);
    }
    throw error;
  }
}

/** The session's last run when it has no `run.ended`. */
export function unfinishedRun(facts: readonly Fact[]) {
  // Read back from the end: a finished last run costs its own facts, not the session's.
  const endedRuns = new Set<string>();
  for (let index = facts.length - 1; index >= 0; index -= 1) {
    const fact = facts[index] as Fact;
    if (fact.type === 'run.ended') endedRuns.add(fact.runId);
    if (fact.type !== 'run.started') continue;
    const ended =
      endedRuns.has(fact.runId) ||
      // A run.ended before its run.started is damage, but it still ends the run.
      facts.some(
        (earlier, at) => at < index && earlier.type === 'run.ended' && earlier.runId === fact.runId,
      );
    if (ended) return undefined;
    return { sessionId: fact.sessionId, turnId: fact.turnId, runId: fact.runId };
  }
  return undefined;
}
