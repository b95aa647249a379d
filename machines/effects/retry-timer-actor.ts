import type { ModelStepCompletion } from '../../adapters/model-adapter.ts';
import type { RunLimits } from '../../events/facts.ts';
import type { RetryTimerInput } from '../pure/actor-inputs.ts';
import { fromTask, type ServicesOf } from './run-services.ts';

const baseDelayMs = 1_000;
const maxDelayMs = 32_000;

/**
 * The default of `limits.maxRetryAfterMs`: a provider asking for a longer wait fails the step
 * instead of parking the run. Also the limit for runs recorded before the limit existed.
 */
export const defaultMaxRetryAfterMs = 300_000;

/**
 * A failure whose `Retry-After` is longer than `limits.maxRetryAfterMs` is not retried: it stays
 * what it was (`rate_limit`, its status and `retryAfterMs`), but `retryable: false`, and its
 * message says how long the provider asked to wait. Other completions pass unchanged. Applied
 * before the failure is recorded, so the log holds the decision (a replay needs no limit).
 */
export function limitRetryAfter(
  completion: ModelStepCompletion,
  limits: Pick<RunLimits, 'maxRetryAfterMs'>,
): ModelStepCompletion {
  if (completion.type !== 'step.failed') return completion;
  const { error } = completion;
  const limit = limits.maxRetryAfterMs ?? defaultMaxRetryAfterMs;
  if (!error.retryable || error.retryAfterMs === undefined || error.retryAfterMs <= limit) {
    return completion;
  }
  const message = `The provider asked to wait ${duration(error.retryAfterMs)} before retrying (Retry-After), longer than limits.maxRetryAfterMs (${duration(limit)}), so the step was not retried; try again later or raise the limit. The provider said: ${error.message}`;
  return { ...completion, error: { ...error, retryable: false, message } };
}

/** `10800000` → `3 h (10800000 ms)`. */
function duration(ms: number): string {
  const amount =
    ms >= 7_200_000
      ? `${Math.round(ms / 360_000) / 10} h`
      : ms >= 120_000
        ? `${Math.round(ms / 6_000) / 10} min`
        : `${Math.round(ms / 100) / 10} s`;
  return `${amount} (${ms} ms)`;
}

/**
 * The retry delay: the provider's Retry-After when it gave one, else exponential backoff from
 * 1 s, capped at 32 s, with "equal jitter" (a random point in the upper half of the interval).
 */
export function retryDelayMs(
  input: { attempt: number; retryAfterMs: number | undefined },
  random: () => number,
): number {
  if (input.retryAfterMs !== undefined) return input.retryAfterMs;
  const ceiling = Math.min(maxDelayMs, baseDelayMs * 2 ** Math.max(0, input.attempt - 1));
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}

/**
 * The `retryTimer` actor (state `requesting.backingOff`): waits, then commits `retry.due` for
 * the next attempt — the timer's expiry is a fact, so the log holds the transition. Stopping the
 * actor (a stop, a restart) cancels the wait.
 */
export function retryTimerActor(servicesOf: ServicesOf) {
  return fromTask<RetryTimerInput>(servicesOf, async (services, input, signal) => {
    const delay = retryDelayMs(input, services.random);
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, delay);
      signal.addEventListener('abort', () => {
        clearTimeout(timer);
        resolve();
      });
    });
    if (signal.aborted) return;
    await services.commit({ type: 'retry.due', stepId: input.stepId, attempt: input.attempt + 1 });
  });
}
