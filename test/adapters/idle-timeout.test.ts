import { describe, expect, it } from 'vitest';
import { aiSdkAdapter } from '../../adapters/ai-sdk-adapter.ts';
import { scriptedModel } from '../../adapters/scripted-model.ts';

const step = (model: ReturnType<typeof scriptedModel>, idleTimeoutMs?: number) =>
  aiSdkAdapter(model).step({
    messages: [{ role: 'user', content: 'go' }],
    tools: [],
    abortSignal: new AbortController().signal,
    ...(idleTimeoutMs === undefined ? {} : { idleTimeoutMs }),
  }).completion;

describe('idleTimeoutMs', () => {
  it('fails a stream that stalls before any output as a retryable timeout with nothing observed', async () => {
    const completion = await step(scriptedModel([{ stall: true }]), 20);
    expect(completion).toEqual({
      type: 'step.failed',
      error: {
        kind: 'timeout',
        retryable: true,
        message: 'The provider sent nothing for 20 ms; the request was abandoned.',
      },
      observedOutput: false,
    });
  });

  it('reports output seen before a stall, so the step is not retried (I9)', async () => {
    const completion = await step(scriptedModel([{ text: ['half an '], stall: true }]), 20);
    expect(completion).toMatchObject({
      type: 'step.failed',
      error: { kind: 'timeout' },
      observedOutput: true,
    });
  });

  it('withholds a call whose stream stalled after its arguments (no finish, no proof)', async () => {
    const model = scriptedModel([
      { toolCalls: [{ name: 'write', input: { path: 'a' } }], stall: true },
    ]);
    const completion = await step(model, 20);
    // A failed step holds no tool calls at all, so nothing of the stalled call can run.
    expect(completion).toEqual({
      type: 'step.failed',
      error: {
        kind: 'timeout',
        retryable: true,
        message: 'The provider sent nothing for 20 ms; the request was abandoned.',
      },
      observedOutput: true,
    });
  });

  it('does not fire on a stream that keeps sending, nor without a limit', async () => {
    const chunks = Array.from({ length: 5 }, (_, index) => `${index}`);
    expect(await step(scriptedModel([{ text: chunks }]), 1_000)).toMatchObject({
      type: 'step.completed',
    });
    expect(await step(scriptedModel([{ text: 'ok' }]))).toMatchObject({ type: 'step.completed' });
  });

  it('is not part of the request hash (it is never sent)', () => {
    const adapter = aiSdkAdapter(scriptedModel([]));
    const request = { messages: [{ role: 'user' as const, content: 'go' }], tools: [] };
    expect(adapter.capture({ ...request, idleTimeoutMs: 5 }).inputHash).toBe(
      adapter.capture(request).inputHash,
    );
  });
});
