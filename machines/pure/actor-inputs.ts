import type { ModelStepRequest } from '../../adapters/model-adapter.ts';
import type { Fact, FactOf } from '../../events/facts.ts';
import type { CallState, TurnContext } from './turn-context.ts';

/** The inputs the turn machine gives its actors (the runtime's actors read them). */

/** Input of the `prepareStep` actor (in `projecting`): build the next request from the log. */
export interface PrepareStepInput {
  sessionId: string;
  runId: string;
  /** Set when this request retries an attempt of an existing step. */
  retry: { stepId: string; attempt: number } | undefined;
  /** False right after a compaction: do not ask for another one before the next step. */
  mayCompact: boolean;
}

/** Input of the `providerStep` actor (in `requesting.streaming`). */
export interface ProviderStepInput {
  sessionId: string;
  runId: string;
  stepId: string;
  attempt: number;
  /**
   * The request `prepareStep` built, from the `step.started` that entered the state
   * (`undefined` when that event did not carry one: the actor builds it from the log again).
   */
  request: PreparedRequest | undefined;
}

/** Input of the `retryTimer` actor (in `requesting.backingOff`). */
export interface RetryTimerInput {
  runId: string;
  stepId: string;
  /** The attempt that failed; `retry.due` carries the next one. */
  attempt: number;
  retryAfterMs: number | undefined;
}

/** Input of the `summarize` actor (in `compacting`). */
export interface SummarizeInput {
  sessionId: string;
  runId: string;
  reason: 'budget' | 'overflow';
}

/** Input of a `settleTool` actor: one call, one phase of its settlement. */
export type SettleToolInput =
  | { phase: 'decide'; sessionId: string; runId: string; stepId: string; callId: string }
  | {
      phase: 'run';
      sessionId: string;
      runId: string;
      stepId: string;
      callId: string;
      decision: NonNullable<CallState['decision']>;
      /** Which start of the call this is: 1, or 2 and more when it runs again after a restart. */
      execution: number;
    }
  | {
      /** Ask the call's tool whether it took effect (`reconcile`), or note it is idempotent. */
      phase: 'reconcile';
      sessionId: string;
      runId: string;
      stepId: string;
      callId: string;
      /** The run's recovery count (`run.recovered` facts): names this check's fact. */
      recovery: number;
    }
  | {
      phase: 'abandon';
      sessionId: string;
      runId: string;
      stepId: string;
      callId: string;
      outcome: 'cancelled' | 'unknown';
    };

/** A request as `prepareStep` built it, waiting for `providerStep` to send it. */
export type PreparedRequest = Omit<ModelStepRequest, 'abortSignal'>;

/**
 * An event of the turn machine: a fact, and on a live run's `step.started` the request that
 * step sends (`prepared`). The request travels on the event the machine takes, never into the
 * log: the stored fact records only its capture (I2).
 */
export type TurnMachineEvent =
  | Exclude<Fact, { type: 'step.started' }>
  | (FactOf<'step.started'> & { prepared?: PreparedRequest });

/** The phases a call's settlement goes through, each a `settleTool` child of its own. */
export type SettlePhase = SettleToolInput['phase'];
export const settlePhases: readonly SettlePhase[] = ['decide', 'run', 'abandon', 'reconcile'];

/** The id of the `settleTool` child settling `call` in `phase` (one per call and phase). */
export const settleChildId = (
  phase: SettlePhase,
  context: TurnContext,
  call: Pick<CallState, 'callId'>,
) => `${phase}:${context.stepId}:${call.callId}`;

/** What a `settleTool` child is told of its phase (the call and its run come from the machine). */
export type SettlePhaseInput = SettleToolInput extends infer TInput
  ? TInput extends SettleToolInput
    ? Omit<TInput, 'sessionId' | 'runId' | 'stepId' | 'callId'>
    : never
  : never;

/** The one way the machine spawns a `settleTool` child: its id and its whole input. */
export function settleChild(
  context: TurnContext,
  call: Pick<CallState, 'callId'>,
  phase: SettlePhaseInput,
): { id: string; input: SettleToolInput } {
  return {
    id: settleChildId(phase.phase, context, call),
    input: {
      ...phase,
      sessionId: context.sessionId,
      runId: context.runId,
      stepId: context.stepId ?? '',
      callId: call.callId,
    },
  };
}
