// What the log viewer shows at one fact of a session: everything computed from the facts through
// that `seq` by turnlog's pure projections and the machine's pure transition. Nothing runs
// again: no request is sent, no tool executes, no clock is read.
import {
  type Fact,
  type FactOf,
  foldRun,
  type LogDamage,
  type ModelMessage,
  planRecovery,
  projectHistory,
  projectTurn,
  ReplayDivergenceError,
  statePath,
  type TurnReadModel,
} from '../../../index.ts';

/** The machine's state at the selected fact: as recorded, and as replaying the log reaches it. */
export interface StateAtSeq {
  /** The `state` the fact recorded (old logs may have none). */
  recorded: string | undefined;
  /** The state `foldRun` reaches over the run's facts through this one. */
  replayed: string | undefined;
  /** Why replaying failed (a recorded state the machine does not reach, a run without start). */
  divergence: string | undefined;
}

/** The messages of one request: the one a step sent, or the one the log would send next. */
export interface RequestAtSeq {
  /** `sent`: the request of the selected step's attempt; `next`: what the next one would carry. */
  kind: 'sent' | 'next';
  stepId: string | undefined;
  attempt: number | undefined;
  /** The provider the projection is for (reasoning is kept only for its own provider). */
  provider: string;
  system: string | undefined;
  messages: ModelMessage[];
  /** For a sent request: the number of messages `step.started` recorded, to compare. */
  recordedCount: number | undefined;
}

/** Everything the viewer shows at one `seq`. */
export interface LogViewAtSeq {
  seq: number;
  fact: Fact;
  state: StateAtSeq;
  /** `projectTurn` over the facts through `seq`. */
  readModel: TurnReadModel;
  request: RequestAtSeq;
}

/** The facts of one step's own request: the request is the one this step sent. */
const stepFacts = new Set<Fact['type']>(['step.started', 'step.completed', 'step.failed']);

/**
 * The view at `seq`, or `undefined` when the session has no fact with that `seq`.
 *
 * @example
 * const view = logViewAt(await runtime.facts('demo'), 4);
 * view?.state.replayed; // 'awaitingPermission'
 */
export function logViewAt(facts: readonly Fact[], seq: number): LogViewAtSeq | undefined {
  const index = facts.findIndex((fact) => fact.seq === seq);
  const fact = facts[index];
  if (fact === undefined) return undefined;
  const through = facts.slice(0, index + 1);
  return {
    seq,
    fact,
    state: stateAt(through, fact),
    readModel: projectTurn(through),
    request: requestAt(through, fact),
  };
}

/** What is wrong with the log as a whole: the damage `planRecovery` reports, in log order. */
export function logDamage(facts: readonly Fact[]): LogDamage[] {
  return planRecovery(facts).damage;
}

function stateAt(through: readonly Fact[], fact: Fact): StateAtSeq {
  try {
    const { snapshot } = foldRun(through, fact.runId);
    return { recorded: fact.state, replayed: statePath(snapshot.value), divergence: undefined };
  } catch (error) {
    if (!ReplayDivergenceError.isInstance(error)) throw error;
    return { recorded: fact.state, replayed: undefined, divergence: error.message };
  }
}

function requestAt(through: readonly Fact[], fact: Fact): RequestAtSeq {
  const run = through.filter((candidate) => candidate.runId === fact.runId);
  const system = run.find((candidate) => candidate.type === 'run.started')?.system;
  const attempt = run.findLast(
    (candidate): candidate is FactOf<'step.started'> =>
      candidate.type === 'step.started' &&
      (!('stepId' in fact) || candidate.stepId === fact.stepId),
  );
  if (stepFacts.has(fact.type) && attempt !== undefined) {
    const projectedThrough = attempt.projectedThroughSeq ?? attempt.seq;
    const provider = attempt.request.provider;
    return {
      kind: 'sent',
      stepId: attempt.stepId,
      attempt: attempt.attempt,
      provider,
      system,
      messages: projectHistory(
        through.filter((candidate) => candidate.seq <= projectedThrough),
        { provider },
      ),
      recordedCount: attempt.request.messageCount,
    };
  }
  const latest = through.findLast(
    (candidate): candidate is FactOf<'step.started'> => candidate.type === 'step.started',
  );
  const provider = latest?.request.provider ?? 'unknown';
  return {
    kind: 'next',
    stepId: undefined,
    attempt: undefined,
    provider,
    system,
    messages: projectHistory(through, { provider }),
    recordedCount: undefined,
  };
}
