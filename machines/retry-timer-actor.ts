import type { RetryTimerInput } from './actor-inputs.ts';
import { fromTask, type ServicesOf } from './run-services.ts';

const baseDelayMs = 1_000;
const maxDelayMs = 32_000;

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
