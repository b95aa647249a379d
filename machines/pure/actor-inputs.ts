import type { ModelStepRequest } from '../../adapters/model-adapter.ts';
import type { CallState } from './turn-context.ts';

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
