import type { Fact } from './facts.ts';
import { findDamage, type LogDamage } from './find-damage.ts';
import type { JsonValue } from './json.ts';
import {
  type CallFacts,
  collectRuns,
  type PendingDecision,
  pendingDecisions,
  type RunFacts,
} from './run-facts.ts';

export type { DamageKind, LogDamage } from './find-damage.ts';

/** What recovery must do, and what it must know, for the facts it read. */
export interface RecoveryPlan {
  /** Every run with `run.started` and no `run.ended`, in log order. */
  runs: RunRecovery[];
  /** Damage found anywhere in the facts, finished runs included. Reported, never repaired. */
  damage: LogDamage[];
}

/** One unfinished run. */
export interface RunRecovery {
  sessionId: string;
  turnId: string;
  runId: string;
  /** The state recorded by the run's last fact: where the process stopped. */
  interruptedIn: string | undefined;
  /**
   * I8: `tool.started` without `tool.settled`, not marked `tool.indeterminate` since its latest
   * start. Run again only when its own tool says it is idempotent, or its own `reconcile` says
   * it did not take effect.
   */
  indeterminate: RecoveryCall[];
  /** Marked `tool.indeterminate` since its latest start, and still without `tool.settled`. */
  unresolved: RecoveryCall[];
  /** Proven calls of the current step with no `tool.started` and no `tool.settled`: provably never ran. */
  neverStarted: RecoveryCall[];
  /** Withheld calls of the current step that still need their `tool.settled`. */
  withheld: RecoveryCall[];
  /** Decisions a person still owes (asks, and unresolved indeterminate calls). */
  pending: PendingDecision[];
  /** The machine reached `terminal` but `run.ended` was never appended. */
  needsRunEnded: boolean;
  /** The part of the plan's `damage` that concerns this run. */
  damage: LogDamage[];
}

/** A call recovery must account for. */
export interface RecoveryCall {
  stepId: string;
  callId: string;
  name: string;
  /** The input `tool.started` recorded (the validated value), else the call's proved input. */
  input: JsonValue;
  /** How many `tool.indeterminate` facts the call has (each recovery that marks it adds one). */
  marks: number;
}

/**
 * Plans the recovery of a log after a restart: for each unfinished run, where it stopped,
 * which calls may have run (indeterminate, I8), which provably never ran, which decisions are
 * pending, and whether only `run.ended` is missing. Also lists every damage found. Pure.
 *
 * @example
 * const plan = planRecovery(await store.read(sessionId));
 * for (const run of plan.runs) {
 *   // commit tool.indeterminate for run.indeterminate, then run.recovered …
 * }
 */
export function planRecovery(facts: readonly Fact[]): RecoveryPlan {
  const damage = findDamage(facts);
  const runs = collectRuns(facts)
    .filter((run) => run.runStarted.length > 0 && run.runEnded.length === 0)
    .map((run) => runRecovery(run, damage));
  return { runs, damage };
}

function runRecovery(run: RunFacts, damage: readonly LogDamage[]): RunRecovery {
  const calls = run.steps.flatMap((step) => step.calls);
  const unsettled = calls.filter((call) => call.settled.length === 0);
  // Marked since its latest start: a call run again after `reconcile` is a new start.
  const marked = (call: CallFacts) => {
    const latest = call.facts.findLast(
      (fact) => fact.type === 'tool.started' || fact.type === 'tool.indeterminate',
    );
    return latest?.type === 'tool.indeterminate';
  };
  const currentStep = run.steps.at(-1);
  const openCalls = (currentStep?.calls ?? []).filter(
    (call) => call.settled.length === 0 && call.started.length === 0,
  );
  return {
    sessionId: run.sessionId,
    turnId: run.turnId,
    runId: run.runId,
    interruptedIn: run.lastState,
    indeterminate: unsettled
      .filter((call) => call.started.length > 0 && !marked(call))
      .map(recoveryCall),
    unresolved: unsettled.filter(marked).map(recoveryCall),
    neverStarted: openCalls.filter((call) => call.call.proof !== null).map(recoveryCall),
    withheld: openCalls.filter((call) => call.call.proof === null).map(recoveryCall),
    pending: pendingDecisions(run),
    needsRunEnded: run.lastState === 'terminal',
    damage: damage.filter(
      (entry) => entry.sessionId === run.sessionId && entry.runId === run.runId,
    ),
  };
}

function recoveryCall(call: CallFacts): RecoveryCall {
  return {
    stepId: call.stepId,
    callId: call.call.callId,
    name: call.call.name,
    input: call.started.at(-1)?.input ?? call.call.input,
    marks: call.facts.filter((fact) => fact.type === 'tool.indeterminate').length,
  };
}
