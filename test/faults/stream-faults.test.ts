import { afterEach, describe, expect, it, vi } from 'vitest';
import type { FactOf } from '../../events/facts.ts';
import type { TurnEvent } from '../../machines/effects/turn-channel.ts';
import { faultRuntime, finishWithFakeTimers, trace, watch } from './fault-harness.ts';
import { type ProviderProfile, providers, serve, settledCalls } from './provider-profiles.ts';

afterEach(() => {
  vi.useRealTimers();
});

const proven = (profile: ProviderProfile) =>
  `[${profile.calls.map((call) => `${call.name}:raw-bytes`).join(' ')}]`;

const joined = (events: TurnEvent[], type: 'text.delta' | 'tool.input.delta') =>
  events
    .map((event) =>
      event.type === type
        ? 'text' in event
          ? event.text
          : 'delta' in event
            ? event.delta
            : ''
        : '',
    )
    .join('');

describe.each(providers)('broken connections through $name', (profile) => {
  it('a connection reset before any byte (fetch rejects) is retried; the retry runs the tool once', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const { runtime, fake, executions } = faultRuntime(profile, [
      { kind: 'connection-error', code: 'ECONNRESET' },
      serve(profile.toolCall),
      serve(profile.text),
    ]);
    const turn = await runtime.send({ sessionId: 's1', text: 'go' });

    expect(await finishWithFakeTimers(turn)).toMatchObject({ status: 'completed', steps: 2 });
    expect(trace(await runtime.facts('s1'))).toEqual([
      'run.started',
      'step.started step_1 attempt 1',
      'step.failed step_1 network, retryable, before output',
      'retry.due step_1 attempt 2',
      'step.started step_1 attempt 2',
      `step.completed step_1 tool-calls ${proven(profile)}`,
      ...settledCalls(profile),
      'step.started step_2 attempt 1',
      'step.completed step_2 stop',
      'run.ended completed end_turn',
    ]);
    expect(executions).toEqual(profile.calls);
    expect(fake.requests).toHaveLength(3);
    await runtime.close();
  });

  it('a reset of the response body before its first frame is retried like a refused connection', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const { runtime, fake } = faultRuntime(profile, [
      serve(profile.text, { kind: 'reset', afterLines: 0 }),
      serve(profile.text),
    ]);
    const turn = await runtime.send({ sessionId: 's1', text: 'go' });

    expect(await finishWithFakeTimers(turn)).toMatchObject({
      status: 'completed',
      reason: 'end_turn',
      steps: 1,
    });
    expect(trace(await runtime.facts('s1'))).toEqual([
      'run.started',
      'step.started step_1 attempt 1',
      'step.failed step_1 network, retryable, before output',
      'retry.due step_1 attempt 2',
      'step.started step_1 attempt 2',
      'step.completed step_1 stop',
      'run.ended completed end_turn',
    ]);
    expect(fake.requests).toHaveLength(2);
    await runtime.close();
  });

  it('a reset before any byte of the step after a tool ran: retried, and the tool does not run again', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const { runtime, fake, executions } = faultRuntime(profile, [
      serve(profile.toolCall),
      { kind: 'connection-error', code: 'ECONNRESET' },
      serve(profile.text),
    ]);
    const turn = await runtime.send({ sessionId: 's1', text: 'go' });

    expect(await finishWithFakeTimers(turn)).toMatchObject({ status: 'completed', steps: 2 });
    expect(trace(await runtime.facts('s1'))).toEqual([
      'run.started',
      'step.started step_1 attempt 1',
      `step.completed step_1 tool-calls ${proven(profile)}`,
      ...settledCalls(profile),
      'step.started step_2 attempt 1',
      'step.failed step_2 network, retryable, before output',
      'retry.due step_2 attempt 2',
      'step.started step_2 attempt 2',
      'step.completed step_2 stop',
      'run.ended completed end_turn',
    ]);
    expect(executions).toEqual(profile.calls);
    // I6: the retry re-projects the same history (with the tool results) from the log.
    expect(fake.requests[2]?.body).toEqual(fake.requests[1]?.body);
    await runtime.close();
  });

  it('a reset after text streamed fails the run: not retried (I9), one request', async () => {
    const { runtime, fake } = faultRuntime(profile, [
      serve(profile.text, { kind: 'reset', afterLines: profile.textCut }),
    ]);
    const turn = await runtime.send({ sessionId: 's1', text: 'go' });
    const log = watch(turn);

    expect(await turn.done).toMatchObject({
      status: 'failed',
      reason: 'provider_error',
      steps: 0,
    });
    const facts = await runtime.facts('s1');
    expect(trace(facts)).toEqual([
      'run.started',
      'step.started step_1 attempt 1',
      'step.failed step_1 stream_interrupted, retryable, after output',
      'run.ended failed provider_error',
    ]);
    expect((facts.at(-1) as FactOf<'run.ended'>).error).toEqual({
      kind: 'stream_interrupted',
      retryable: true,
      message: 'Failed to process successful response: terminated: other side closed',
    });
    expect(joined(log.events, 'text.delta').length).toBeGreaterThan(0);
    expect(fake.requests).toHaveLength(1);
    await runtime.close();
  });

  it('a reset in the middle of tool arguments fails the run and never runs the tool', async () => {
    const { runtime, fake, executions } = faultRuntime(profile, [
      serve(profile.toolCall, { kind: 'reset', afterLines: profile.argumentCut, midFrame: true }),
    ]);
    const turn = await runtime.send({ sessionId: 's1', text: 'go' });
    const log = watch(turn);

    expect(await turn.done).toMatchObject({ status: 'failed', reason: 'provider_error' });
    expect(trace(await runtime.facts('s1'))).toEqual([
      'run.started',
      'step.started step_1 attempt 1',
      'step.failed step_1 stream_interrupted, retryable, after output',
      'run.ended failed provider_error',
    ]);
    expect(joined(log.events, 'tool.input.delta')).toBe(profile.argumentBytes);
    expect(executions).toEqual([]);
    expect(fake.requests).toHaveLength(1);
    await runtime.close();
  });
});

describe.each(providers)('streams that end before their finish through $name', (profile) => {
  it("a reset after a call's arguments completed, before the finish: failed, the call never runs", async () => {
    const { runtime, fake, executions } = faultRuntime(profile, [
      serve(profile.toolCall, { kind: 'reset', afterLines: profile.callCompleteCut }),
    ]);
    const turn = await runtime.send({ sessionId: 's1', text: 'go' });
    const log = watch(turn);

    expect(await turn.done).toMatchObject({ status: 'failed', reason: 'provider_error' });
    expect(trace(await runtime.facts('s1'))).toEqual([
      'run.started',
      'step.started step_1 attempt 1',
      'step.failed step_1 stream_interrupted, retryable, after output',
      'run.ended failed provider_error',
    ]);
    const [first] = profile.calls;
    expect(joined(log.events, 'tool.input.delta')).toContain(JSON.stringify(first?.input));
    expect(executions).toEqual([]);
    expect(fake.requests).toHaveLength(1);
    await runtime.close();
  });

  it.each([
    ['text', 'textCut'],
    ['toolCall', 'argumentCut'],
  ] as const)(
    'a %s body that closes cleanly before its finish: failed as interrupted, nothing runs',
    async (recording, cut) => {
      const lines = profile[recording].lines.slice(0, profile[cut]);
      const { runtime, fake, executions } = faultRuntime(profile, [{ kind: 'sse', lines }]);
      const turn = await runtime.send({ sessionId: 's1', text: 'go' });

      expect(await turn.done).toMatchObject({ status: 'failed', reason: 'provider_error' });
      const facts = await runtime.facts('s1');
      expect(trace(facts)).toEqual([
        'run.started',
        'step.started step_1 attempt 1',
        'step.failed step_1 stream_interrupted, retryable, after output',
        'run.ended failed provider_error',
      ]);
      // The provider package reports the early end as a finish with reason "interrupted".
      expect((facts.at(-1) as FactOf<'run.ended'>).error).toEqual({
        kind: 'stream_interrupted',
        retryable: true,
        message: 'The provider stream ended with finish reason "interrupted".',
      });
      expect(executions).toEqual([]);
      expect(fake.requests).toHaveLength(1);
      await runtime.close();
    },
  );
});

describe.each(providers)('malformed and stalled streams through $name', (profile) => {
  it('a malformed frame among the tool arguments fails the step; the tool never runs', async () => {
    const { runtime, fake, executions } = faultRuntime(profile, [
      serve(profile.toolCall, { kind: 'malformed', atLine: profile.argumentCut - 1 }),
    ]);
    const turn = await runtime.send({ sessionId: 's1', text: 'go' });

    expect(await turn.done).toMatchObject({ status: 'failed', reason: 'provider_error' });
    expect(trace(await runtime.facts('s1'))).toEqual([
      'run.started',
      'step.started step_1 attempt 1',
      'step.failed step_1 stream_interrupted, retryable, after output',
      'run.ended failed provider_error',
    ]);
    expect(executions).toEqual([]);
    expect(fake.requests).toHaveLength(1);
    await runtime.close();
  });

  it('a stream that stalls after text ends only by stop(): aborted, the request aborted, nothing else logged', async () => {
    const { runtime, fake } = faultRuntime(profile, [
      serve(profile.text, { kind: 'stall', afterLines: profile.textCut }),
    ]);
    const turn = await runtime.send({ sessionId: 's1', text: 'go' });
    const log = watch(turn);
    await log.next('text.delta');

    await runtime.stop({ sessionId: 's1', reason: 'stalled' });
    expect(await turn.done).toMatchObject({
      status: 'aborted',
      reason: 'stop_requested',
      steps: 0,
    });
    expect(trace(await runtime.facts('s1'))).toEqual([
      'run.started',
      'step.started step_1 attempt 1',
      'run.stop.requested',
      'run.ended aborted stop_requested',
    ]);
    expect(fake.requests).toHaveLength(1);
    expect(fake.requests[0]?.signal?.aborted).toBe(true);
    await runtime.close();
  });

  it('a request that never gets a response ends only by stop(): aborted, nothing else logged', async () => {
    const { runtime, fake } = faultRuntime(profile, [{ kind: 'hang' }]);
    const turn = await runtime.send({ sessionId: 's1', text: 'go' });
    await fake.request(1);

    await runtime.stop({ sessionId: 's1' });
    expect(await turn.done).toMatchObject({ status: 'aborted', reason: 'stop_requested' });
    expect(trace(await runtime.facts('s1'))).toEqual([
      'run.started',
      'step.started step_1 attempt 1',
      'run.stop.requested',
      'run.ended aborted stop_requested',
    ]);
    expect(fake.requests).toHaveLength(1);
    expect(fake.requests[0]?.signal?.aborted).toBe(true);
    await runtime.close();
  });

  it('a stream that stalls in the middle of tool arguments: stop() ends it aborted; the tool never runs', async () => {
    const { runtime, fake, executions } = faultRuntime(profile, [
      serve(profile.toolCall, { kind: 'stall', afterLines: profile.argumentCut }),
    ]);
    const turn = await runtime.send({ sessionId: 's1', text: 'go' });
    const log = watch(turn);
    await log.next('tool.input.delta');

    await runtime.stop({ sessionId: 's1' });
    expect(await turn.done).toMatchObject({ status: 'aborted', reason: 'stop_requested' });
    expect(trace(await runtime.facts('s1'))).toEqual([
      'run.started',
      'step.started step_1 attempt 1',
      'run.stop.requested',
      'run.ended aborted stop_requested',
    ]);
    expect(executions).toEqual([]);
    expect(fake.requests[0]?.signal?.aborted).toBe(true);
    await runtime.close();
  });
});
