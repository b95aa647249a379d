import { describe, expect, it } from 'vitest';
import type { ModelStepCompletion } from '../../adapters/model-adapter.ts';
import {
  defaultMaxRetryAfterMs,
  limitRetryAfter,
} from '../../machines/effects/retry-timer-actor.ts';

const rateLimited = (retryAfterMs: number | undefined): ModelStepCompletion => ({
  type: 'step.failed',
  observedOutput: false,
  error: {
    kind: 'rate_limit',
    retryable: true,
    message: 'slow down',
    status: 429,
    ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
  },
});

describe('limitRetryAfter', () => {
  it('keeps a failure whose Retry-After is within the limit, or that gave none, retryable', () => {
    for (const completion of [rateLimited(60_000), rateLimited(undefined), rateLimited(300_000)]) {
      expect(limitRetryAfter(completion, { maxRetryAfterMs: 300_000 })).toBe(completion);
    }
  });

  it('applies the default to runs recorded before the limit existed (no maxRetryAfterMs)', () => {
    expect(defaultMaxRetryAfterMs).toBe(300_000);
    expect(limitRetryAfter(rateLimited(300_001), {})).toEqual({
      type: 'step.failed',
      observedOutput: false,
      error: {
        kind: 'rate_limit',
        retryable: false,
        status: 429,
        retryAfterMs: 300_001,
        message:
          'The provider asked to wait 5 min (300001 ms) before retrying (Retry-After), longer than limits.maxRetryAfterMs (5 min (300000 ms)), so the step was not retried; try again later or raise the limit. The provider said: slow down',
      },
    });
  });

  it('says the wait in seconds, minutes or hours', () => {
    const message = (retryAfterMs: number) => {
      const limited = limitRetryAfter(rateLimited(retryAfterMs), { maxRetryAfterMs: 0 });
      return limited.type === 'step.failed' ? limited.error.message.split(' before')[0] : '';
    };
    expect(message(1_500)).toBe('The provider asked to wait 1.5 s (1500 ms)');
    expect(message(150_000)).toBe('The provider asked to wait 2.5 min (150000 ms)');
    expect(message(86_400_000)).toBe('The provider asked to wait 24 h (86400000 ms)');
  });

  it('leaves a failure that is not retried anyway, and a completed step, as they are', () => {
    const quota: ModelStepCompletion = {
      type: 'step.failed',
      observedOutput: false,
      error: { kind: 'quota', retryable: false, message: 'billing', retryAfterMs: 9_999_999 },
    };
    const completed: ModelStepCompletion = {
      type: 'step.completed',
      finishReason: { unified: 'stop', raw: 'stop' },
      usage: {
        inputTokens: 1,
        outputTokens: 1,
        reasoningTokens: undefined,
        cachedInputTokens: undefined,
      },
      content: [],
      toolCalls: [],
      response: { id: undefined, modelId: undefined },
    };
    expect(limitRetryAfter(quota, { maxRetryAfterMs: 1 })).toBe(quota);
    expect(limitRetryAfter(completed, { maxRetryAfterMs: 1 })).toBe(completed);
  });
});
