import type { Fact, FactOf, ProposedFact, RunLimits, RunSettings } from '../../events/facts.ts';
import { planRecovery, type RecoveryCall, type RunRecovery } from '../../events/plan-recovery.ts';
import { type RehydratedRun, ReplayDivergenceError, rehydrateRun } from './rehydrate.ts';
import type { TurnMachine } from './turn-machine.ts';

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
  rehydrated: RehydratedRun & { limits: RunLimits; settings: RunSettings | undefined };
}

/**
 * Rebuilds a session's unfinished run (`runId`, else its last one) for resuming, or says why it
 * cannot be resumed: the run's facts break the log's rules (`planRecovery`'s damage), or the turn
 * machine cannot rebuild it (`rehydrateRun`'s `ReplayDivergenceError`). Damage is reported, never
 * repaired. `undefined` when there is no such unfinished run. (Reading the session is the
 * effects' part: machines/effects/load-run.ts.)
 */
export function resumeRun(
  facts: Fact[],
  sessionId: string,
  runId: string | undefined,
  machine: TurnMachine,
): LoadedRun | DamagedRun | undefined {
  const target = runId ?? unfinishedRun(facts)?.runId;
  const plan = planRecovery(facts).runs.find((candidate) => candidate.runId === target);
  if (target === undefined || plan === undefined) return undefined;
  if (plan.damage.length > 0) {
    return damagedRun(
      sessionId,
      target,
      plan.damage.map((damage) => damage.message),
      plan.interruptedIn,
    );
  }
  try {
    const rehydrated = rehydrateRun(facts, target, machine);
    const started = rehydrated.facts[0] as FactOf<'run.started'>;
    const ids = { sessionId, turnId: plan.turnId, runId: target };
    return {
      ids,
      facts,
      plan,
      rehydrated: { ...rehydrated, limits: started.limits, settings: started.settings },
    };
  } catch (error) {
    if (ReplayDivergenceError.isInstance(error)) {
      return damagedRun(sessionId, target, [error.message], plan.interruptedIn);
    }
    throw error;
  }
}

/** A run that cannot be resumed, and why. */
export function damagedRun(
  sessionId: string,
  runId: string | undefined,
  damage: string[],
  interruptedIn?: string,
): DamagedRun {
  return { sessionId, runId, interruptedIn, damage };
}

/** How a recovery resolves a call of the named tool without a person, if it can (`CallSettler.checkOf`). */
export type CheckOf = (name: string) => 'reconcile' | 'idempotent' | undefined;

/**
 * The recovery sequence (architecture/turn-machine.md, "Recovery"), committed in this order once
 * the run's snapshot is restored: each started-but-unsettled call marked `tool.indeterminate`,
 * then `run.recovered`, whose transition starts what must run. A call whose tool can check it
 * (`checkOf`: its `reconcile`, or it is idempotent) is marked with that `check`, and so is an
 * earlier-marked call still unsettled (a person had been asked, or the check was cut short):
 * its tool is asked again, before anyone. Otherwise it never runs again (I8) and a person is
 * asked. A run whose fold reached `terminal` needs none of it.
 */
export function recoveryFacts(
  plan: RunRecovery,
  checkOf: CheckOf = () => undefined,
): ProposedFact[] {
  const mark = (call: RecoveryCall): ProposedFact => {
    const check = checkOf(call.name);
    return {
      type: 'tool.indeterminate',
      // The first mark keeps the id logs have always had; a call marked again gets the next one.
      id: `${call.stepId}:${call.callId}:indeterminate${call.marks === 0 ? '' : `-${call.marks + 1}`}`,
      callId: call.callId,
      name: call.name,
      ...(check && { check }),
    };
  };
  return [
    ...plan.indeterminate.map(mark),
    ...plan.unresolved.filter((call) => checkOf(call.name) !== undefined).map(mark),
    {
      type: 'run.recovered',
      interrupted: plan.interruptedIn ?? 'unknown',
      indeterminate: recoveredCallIds(plan),
    },
  ];
}

/** The calls a recovery reports: started and never settled, and those still unresolved. */
export function recoveredCallIds(plan: RunRecovery): string[] {
  return [...plan.indeterminate, ...plan.unresolved].map((call) => call.callId);
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
