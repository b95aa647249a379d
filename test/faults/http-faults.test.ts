import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { FactOf } from '../../events/facts.ts';
import { memoryStore } from '../../store/memory/memory-store.ts';
import { createFakeFetch, openaiError } from '../helpers/fake-fetch.ts';
import { testRuntime } from '../runtime/runtime-helpers.ts';
import { faultRuntime, finishWithFakeTimers, trace, watch } from './fault-harness.ts';
import { providers, serve, settledCalls } from './provider-profiles.ts';

// Retry waits run on fake timers: only setTimeout is faked, so streams and the store keep their
// microtasks and the AI SDK is untouched.
beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
});
afterEach(() => {
  vi.useRealTimers();
});

describe.each(providers)('HTTP failures through $name', (profile) => {
  it('401: one attempt, failed as auth, never retried, no tool runs', async () => {
    const { runtime, fake, executions } = faultRuntime(profile, [profile.httpError(401)]);
    const turn = await runtime.send({ sessionId: 's1', text: 'go' });

    const result = await turn.done;
    const facts = await runtime.facts('s1');
    expect(trace(facts)).toEqual([
      'run.started',
      'step.started step_1 attempt 1',
      'step.failed step_1 auth, final, before output, status 401',
      'run.ended failed provider_error',
    ]);
    const failed = facts.find((fact) => fact.type === 'step.failed');
    expect(facts.at(-1)).toMatchObject({ error: failed?.error });
    expect(failed?.error.message).not.toContain('sk-proj-abcdefghijklmnop1234');
    expect(result).toMatchObject({ status: 'failed', reason: 'provider_error', steps: 0 });
    expect(fake.requests).toHaveLength(1);
    expect(executions).toEqual([]);
    await runtime.close();
  });

  it('429 with a 2 s Retry-After: the retry is due after exactly 2000 ms, then the step runs', async () => {
    const { runtime, fake, executions } = faultRuntime(profile, [
      profile.httpError(429, { retryAfterSeconds: 2 }),
      serve(profile.toolCall),
      serve(profile.text),
    ]);
    const turn = await runtime.send({ sessionId: 's1', text: 'go' });
    const log = watch(turn);
    await log.next('step.failed');

    await vi.advanceTimersByTimeAsync(1_999);
    expect(log.has('retry.due')).toBe(false);
    expect(fake.requests).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    await log.next('retry.due');

    expect(await finishWithFakeTimers(turn)).toMatchObject({ status: 'completed', steps: 2 });
    expect(trace(await runtime.facts('s1'))).toEqual([
      'run.started',
      'step.started step_1 attempt 1',
      'step.failed step_1 rate_limit, retryable, before output, status 429, retry after 2000 ms',
      'retry.due step_1 attempt 2',
      'step.started step_1 attempt 2',
      `step.completed step_1 tool-calls [${profile.calls.map((call) => `${call.name}:raw-bytes`).join(' ')}]`,
      ...settledCalls(profile),
      'step.started step_2 attempt 1',
      'step.completed step_2 stop',
      'run.ended completed end_turn',
    ]);
    expect(executions).toEqual(profile.calls);
    expect(fake.requests).toHaveLength(3);
    // I6: the retried attempt is re-projected from the log: the same request, sent again.
    expect(fake.requests[1]?.body).toEqual(fake.requests[0]?.body);
    await runtime.close();
  });

  it('429 without Retry-After: the retry waits the backoff (750 ms: 1 s ceiling, jitter 0.5)', async () => {
    const { runtime, fake, executions } = faultRuntime(profile, [
      profile.httpError(429),
      serve(profile.text),
    ]);
    const turn = await runtime.send({ sessionId: 's1', text: 'go' });
    const log = watch(turn);
    await log.next('step.failed');

    await vi.advanceTimersByTimeAsync(749);
    expect(log.has('retry.due')).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await log.next('retry.due');

    expect(await finishWithFakeTimers(turn)).toMatchObject({
      status: 'completed',
      reason: 'end_turn',
    });
    expect(trace(await runtime.facts('s1'))).toEqual([
      'run.started',
      'step.started step_1 attempt 1',
      'step.failed step_1 rate_limit, retryable, before output, status 429',
      'retry.due step_1 attempt 2',
      'step.started step_1 attempt 2',
      'step.completed step_1 stop',
      'run.ended completed end_turn',
    ]);
    expect(fake.requests).toHaveLength(2);
    expect(executions).toEqual([]);
    await runtime.close();
  });

  it('429 on every attempt: three attempts (backoffs 750 and 1500 ms), then failed retries_exhausted', async () => {
    const { runtime, fake } = faultRuntime(profile, [
      profile.httpError(429),
      profile.httpError(429),
      profile.httpError(429),
    ]);
    const turn = await runtime.send({ sessionId: 's1', text: 'go' });
    const log = watch(turn);
    await log.next('step.failed', 1);
    await vi.advanceTimersByTimeAsync(750);
    await log.next('step.failed', 2);
    await vi.advanceTimersByTimeAsync(1_499);
    expect(log.has('retry.due', 2)).toBe(false);
    await vi.advanceTimersByTimeAsync(1);

    const result = await finishWithFakeTimers(turn);
    const facts = await runtime.facts('s1');
    expect(trace(facts)).toEqual([
      'run.started',
      'step.started step_1 attempt 1',
      'step.failed step_1 rate_limit, retryable, before output, status 429',
      'retry.due step_1 attempt 2',
      'step.started step_1 attempt 2',
      'step.failed step_1 rate_limit, retryable, before output, status 429',
      'retry.due step_1 attempt 3',
      'step.started step_1 attempt 3',
      'step.failed step_1 rate_limit, retryable, before output, status 429',
      'run.ended failed retries_exhausted',
    ]);
    const ended = facts.at(-1) as FactOf<'run.ended'>;
    expect(ended.error).toEqual((facts.at(-2) as FactOf<'step.failed'>).error);
    expect(result).toMatchObject({ status: 'failed', reason: 'retries_exhausted', steps: 0 });
    expect(fake.requests).toHaveLength(3);
    await runtime.close();
  });

  it.each([
    [500, 'unknown'],
    [503, 'overloaded'],
  ])(
    '%i: a retryable %s failure, retried after the backoff; the tool then runs once',
    async (status, kind) => {
      const { runtime, fake, executions } = faultRuntime(profile, [
        profile.httpError(status),
        serve(profile.toolCall),
        serve(profile.text),
      ]);
      const turn = await runtime.send({ sessionId: 's1', text: 'go' });

      expect(await finishWithFakeTimers(turn)).toMatchObject({ status: 'completed', steps: 2 });
      const facts = await runtime.facts('s1');
      expect(trace(facts).slice(0, 5)).toEqual([
        'run.started',
        'step.started step_1 attempt 1',
        `step.failed step_1 ${kind}, retryable, before output, status ${status}`,
        'retry.due step_1 attempt 2',
        'step.started step_1 attempt 2',
      ]);
      expect(trace(facts).slice(6, -3)).toEqual(settledCalls(profile));
      expect(trace(facts).at(-1)).toBe('run.ended completed end_turn');
      expect(executions).toEqual(profile.calls);
      expect(fake.requests).toHaveLength(3);
      await runtime.close();
    },
  );
});

describe('quota, stop during the backoff and Retry-After dates through openai-responses', () => {
  const [profile] = providers;
  if (profile === undefined) throw new Error('no provider profile');

  it('429 insufficient_quota is quota, not a rate limit: one attempt, failed at once', async () => {
    const { runtime, fake } = faultRuntime(profile, [
      openaiError(
        429,
        {
          message: 'You exceeded your current quota, please check your plan and billing details.',
          type: 'insufficient_quota',
          code: 'insufficient_quota',
        },
        { 'retry-after': '2' },
      ),
    ]);
    const turn = await runtime.send({ sessionId: 's1', text: 'go' });

    expect(await turn.done).toMatchObject({ status: 'failed', reason: 'provider_error' });
    expect(trace(await runtime.facts('s1'))).toEqual([
      'run.started',
      'step.started step_1 attempt 1',
      'step.failed step_1 quota, final, before output, status 429',
      'run.ended failed provider_error',
    ]);
    expect(fake.requests).toHaveLength(1);
    await runtime.close();
  });

  it('a stop during the backoff ends the run aborted: the wait is cancelled and nothing is re-sent', async () => {
    const { runtime, fake } = faultRuntime(profile, [
      profile.httpError(429, { retryAfterSeconds: 2 }),
    ]);
    const turn = await runtime.send({ sessionId: 's1', text: 'go' });
    const log = watch(turn);
    await log.next('step.failed');
    await vi.advanceTimersByTimeAsync(1_000);

    await runtime.stop({ sessionId: 's1' });
    expect(await turn.done).toMatchObject({ status: 'aborted', reason: 'stop_requested' });
    await vi.advanceTimersByTimeAsync(5_000);
    const facts = await runtime.facts('s1');
    expect(trace(facts)).toEqual([
      'run.started',
      'step.started step_1 attempt 1',
      'step.failed step_1 rate_limit, retryable, before output, status 429, retry after 2000 ms',
      'run.stop.requested',
      'run.ended aborted stop_requested',
    ]);
    expect(facts.find((fact) => fact.type === 'run.stop.requested')?.state).toBe('terminal');
    expect(vi.getTimerCount()).toBe(0);
    expect(fake.requests).toHaveLength(1);
    await runtime.close();
  });

  it('a Retry-After of 3 hours fails the step as rate limited, saying how long, instead of parking the run', async () => {
    const { runtime, fake } = faultRuntime(profile, [
      openaiError(
        429,
        { message: 'Rate limit reached for requests', type: 'requests' },
        {
          'retry-after': '10800',
        },
      ),
    ]);
    const turn = await runtime.send({ sessionId: 's1', text: 'go' });

    const result = await turn.done;
    const facts = await runtime.facts('s1');
    expect(trace(facts)).toEqual([
      'run.started',
      'step.started step_1 attempt 1',
      'step.failed step_1 rate_limit, final, before output, status 429, retry after 10800000 ms',
      'run.ended failed provider_error',
    ]);
    const failed = facts.find((fact) => fact.type === 'step.failed');
    expect(failed?.error.message).toBe(
      'The provider asked to wait 3 h (10800000 ms) before retrying (Retry-After), longer than limits.maxRetryAfterMs (5 min (300000 ms)), so the step was not retried; try again later or raise the limit. The provider said: Rate limit reached for requests',
    );
    expect(result).toMatchObject({
      status: 'failed',
      reason: 'provider_error',
      error: { message: failed?.error.message },
    });
    expect(vi.getTimerCount()).toBe(0);
    expect(fake.requests).toHaveLength(1);
    await runtime.close();
  });

  it('limits.maxRetryAfterMs sets the longest wait: 2 s over a limit of 1 s fails, under 3 s retries', async () => {
    const over = faultRuntime(profile, [profile.httpError(429, { retryAfterSeconds: 2 })], {
      maxRetryAfterMs: 1_000,
    });
    const failed = await over.runtime.send({ sessionId: 's1', text: 'go' });
    expect(await failed.done).toMatchObject({ status: 'failed', reason: 'provider_error' });
    expect(trace(await over.runtime.facts('s1'))[2]).toBe(
      'step.failed step_1 rate_limit, final, before output, status 429, retry after 2000 ms',
    );
    expect(over.fake.requests).toHaveLength(1);
    await over.runtime.close();

    const under = faultRuntime(
      profile,
      [profile.httpError(429, { retryAfterSeconds: 2 }), serve(profile.text)],
      { maxRetryAfterMs: 3_000 },
    );
    const retried = await under.runtime.send({ sessionId: 's1', text: 'go' });
    expect(await finishWithFakeTimers(retried)).toMatchObject({ status: 'completed' });
    expect(under.fake.requests).toHaveLength(2);
    await under.runtime.close();
  });

  it("reads a Retry-After HTTP date against the runtime's clock (now), not the machine's", async () => {
    const clock = Date.UTC(2026, 10, 1, 12, 0, 0);
    const fake = createFakeFetch([
      openaiError(
        429,
        { message: 'Rate limit reached for requests', type: 'requests' },
        { 'retry-after': new Date(clock + 2_000).toUTCString() },
      ),
      serve(profile.text),
    ]);
    const runtime = testRuntime(memoryStore(), {
      model: profile.model(fake.fetch),
      now: () => clock,
    });
    const turn = await runtime.send({ sessionId: 's1', text: 'go' });

    expect(await finishWithFakeTimers(turn)).toMatchObject({ status: 'completed' });
    expect(trace(await runtime.facts('s1')).slice(2, 4)).toEqual([
      'step.failed step_1 rate_limit, retryable, before output, status 429, retry after 2000 ms',
      'retry.due step_1 attempt 2',
    ]);
    await runtime.close();
  });
});
