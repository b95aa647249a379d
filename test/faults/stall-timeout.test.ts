import { afterEach, describe, expect, it, vi } from 'vitest';
import { faultRuntime, finishWithFakeTimers, trace } from './fault-harness.ts';
import { providers, serve } from './provider-profiles.ts';

afterEach(() => {
  vi.useRealTimers();
});

describe.each(providers)('limits.streamIdleMs through $name', (profile) => {
  it('a request that gets no response times out and is retried as a recorded attempt', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const { runtime, fake } = faultRuntime(profile, [{ kind: 'hang' }, serve(profile.text)], {
      streamIdleMs: 5_000,
    });
    const turn = await runtime.send({ sessionId: 's1', text: 'go' });

    expect(await finishWithFakeTimers(turn)).toMatchObject({ status: 'completed', steps: 1 });
    expect(trace(await runtime.facts('s1'))).toEqual([
      'run.started',
      'step.started step_1 attempt 1',
      'step.failed step_1 timeout, retryable, before output',
      'retry.due step_1 attempt 2',
      'step.started step_1 attempt 2',
      'step.completed step_1 stop',
      'run.ended completed end_turn',
    ]);
    expect(fake.requests).toHaveLength(2);
    expect(fake.requests[0]?.signal?.aborted).toBe(true);
    await runtime.close();
  });

  it('a stream that stalls after text times out and fails the run (output was seen: I9)', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const { runtime, fake } = faultRuntime(
      profile,
      [serve(profile.text, { kind: 'stall', afterLines: profile.textCut })],
      {
        streamIdleMs: 5_000,
      },
    );
    const turn = await runtime.send({ sessionId: 's1', text: 'go' });

    expect(await finishWithFakeTimers(turn)).toMatchObject({
      status: 'failed',
      reason: 'provider_error',
    });
    expect(trace(await runtime.facts('s1'))).toEqual([
      'run.started',
      'step.started step_1 attempt 1',
      'step.failed step_1 timeout, retryable, after output',
      'run.ended failed provider_error',
    ]);
    expect(fake.requests).toHaveLength(1);
    await runtime.close();
  });

  it('a stream that stalls in the middle of tool arguments times out; the tool never runs', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const { runtime, executions } = faultRuntime(
      profile,
      [serve(profile.toolCall, { kind: 'stall', afterLines: profile.argumentCut })],
      { streamIdleMs: 5_000 },
    );
    const turn = await runtime.send({ sessionId: 's1', text: 'go' });

    expect(await finishWithFakeTimers(turn)).toMatchObject({
      status: 'failed',
      reason: 'provider_error',
    });
    expect(executions).toEqual([]);
    await runtime.close();
  });
});
