import type { LanguageModelV3, LanguageModelV3StreamPart } from '@ai-sdk/provider';
import { describe, expect, it } from 'vitest';
import { UnsupportedModelError } from '../../adapters/adapter-errors.ts';
import { aiSdkAdapter } from '../../adapters/ai-sdk-adapter.ts';
import type {
  ModelStepCompletion,
  ModelStepEvent,
  ModelStepRequest,
} from '../../adapters/model-adapter.ts';
import { type ScriptedStep, scriptedModel } from '../../adapters/scripted-model.ts';

const tools: ModelStepRequest['tools'] = [
  { name: 'readFile', description: 'Reads a file', inputSchema: { type: 'object' } },
];

function request(overrides: Partial<ModelStepRequest> = {}): ModelStepRequest {
  return {
    messages: [{ role: 'user', content: 'go' }],
    tools,
    abortSignal: new AbortController().signal,
    ...overrides,
  };
}

async function runOne(step: ScriptedStep, overrides: Partial<ModelStepRequest> = {}) {
  const result = aiSdkAdapter(scriptedModel([step])).step(request(overrides));
  const events: ModelStepEvent[] = [];
  for await (const event of result.events) events.push(event);
  return { events, completion: await result.completion };
}

function failure(completion: ModelStepCompletion) {
  if (completion.type !== 'step.failed')
    throw new Error(`expected step.failed: ${JSON.stringify(completion)}`);
  return completion;
}

describe('aiSdkAdapter', () => {
  it('takes provider and model id from the model', () => {
    const adapter = aiSdkAdapter(scriptedModel([], { provider: 'acme.chat', modelId: 'acme-1' }));
    expect([adapter.provider, adapter.modelId]).toEqual(['acme.chat', 'acme-1']);
  });

  it('captures a request purely, without its abort signal, and hands the same capture to step()', () => {
    const adapter = aiSdkAdapter(scriptedModel([{ text: 'ok' }]));
    const { abortSignal: _signal, ...body } = request({ activeTools: ['readFile'] });
    const capture = adapter.capture(body);
    expect(capture).toEqual({
      provider: 'scripted',
      modelId: 'scripted-model',
      messageCount: 1,
      tools: ['readFile'],
      activeTools: ['readFile'],
      inputHash: expect.stringMatching(/^sha256:[0-9a-f]{32}$/),
    });
    expect(adapter.capture(structuredClone(body))).toEqual(capture);
    expect(adapter.step({ ...body, abortSignal: new AbortController().signal }).request).toEqual(
      capture,
    );
    const changed = adapter.capture({ ...body, messages: [{ role: 'user', content: 'stop' }] });
    expect(changed.inputHash).not.toBe(capture.inputHash);
  });

  it('streams reasoning, text and tool input deltas in order', async () => {
    const { events, completion } = await runOne({
      reasoning: ['Let me ', 'look.'],
      text: ['Reading ', 'it.'],
      toolCalls: [{ id: 'call_7', name: 'readFile', deltas: ['{"path"', ':"a.md"}'] }],
    });
    expect(events).toEqual([
      { type: 'reasoning.delta', text: 'Let me ' },
      { type: 'reasoning.delta', text: 'look.' },
      { type: 'text.delta', text: 'Reading ' },
      { type: 'text.delta', text: 'it.' },
      { type: 'tool.input.delta', callId: 'call_7', name: 'readFile', delta: '{"path"' },
      { type: 'tool.input.delta', callId: 'call_7', name: 'readFile', delta: ':"a.md"}' },
    ]);
    expect(completion).toEqual({
      type: 'step.completed',
      finishReason: { unified: 'tool-calls', raw: undefined },
      usage: {
        inputTokens: undefined,
        outputTokens: 6,
        reasoningTokens: undefined,
        cachedInputTokens: undefined,
      },
      content: [
        { type: 'reasoning', text: 'Let me look.' },
        { type: 'text', text: 'Reading it.' },
      ],
      toolCalls: [
        { callId: 'call_7', name: 'readFile', input: { path: 'a.md' }, proof: 'raw-bytes' },
      ],
      response: { id: 'resp_1', modelId: 'scripted-model' },
    });
  });

  it('resolves the completion without anyone reading the events', async () => {
    const step = aiSdkAdapter(scriptedModel([{ text: ['a', 'b'] }])).step(request());
    expect(await step.completion).toMatchObject({
      type: 'step.completed',
      content: [{ type: 'text', text: 'ab' }],
    });
  });

  it('keeps unreported usage undefined, never 0', async () => {
    const { completion } = await runOne({ text: 'hi', usage: { inputTokens: 3 } });
    expect(completion).toMatchObject({
      usage: {
        inputTokens: 3,
        outputTokens: undefined,
        reasoningTokens: undefined,
        cachedInputTokens: undefined,
      },
    });
  });

  it('sends only the active tools to the model', async () => {
    const model = scriptedModel([{ text: 'ok' }]);
    const twoTools = [
      ...tools,
      { name: 'writeFile', description: 'Writes', inputSchema: { type: 'object' } },
    ];
    await aiSdkAdapter(model).step(request({ tools: twoTools, activeTools: ['writeFile'] }))
      .completion;
    expect(model.requests[0]?.tools?.map((tool) => tool.name)).toEqual(['writeFile']);
  });

  it('accepts an AI SDK v3 language model', async () => {
    const parts: LanguageModelV3StreamPart[] = [
      { type: 'stream-start', warnings: [] },
      { type: 'text-start', id: 't' },
      { type: 'text-delta', id: 't', delta: 'from v3' },
      { type: 'text-end', id: 't' },
      {
        type: 'finish',
        finishReason: { unified: 'other', raw: 'end_turn' },
        usage: {
          inputTokens: { total: 4, noCache: 4, cacheRead: 0, cacheWrite: undefined },
          outputTokens: { total: 2, text: 2, reasoning: undefined },
        },
      },
    ];
    const v3: LanguageModelV3 = {
      specificationVersion: 'v3',
      provider: 'legacy',
      modelId: 'legacy-1',
      supportedUrls: {},
      doGenerate: () => Promise.reject(new Error('not used')),
      doStream: async () => ({
        stream: new ReadableStream({
          start(controller) {
            for (const part of parts) controller.enqueue(part);
            controller.close();
          },
        }),
      }),
    };
    const completion = await aiSdkAdapter(v3).step(request()).completion;
    expect(completion).toMatchObject({
      type: 'step.completed',
      finishReason: { unified: 'stop', raw: 'end_turn' },
      content: [{ type: 'text', text: 'from v3' }],
      usage: { inputTokens: 4, outputTokens: 2, reasoningTokens: undefined, cachedInputTokens: 0 },
    });
  });

  it('refuses something that is not a v3 or v4 model object with an error saying what to pass', () => {
    const attempt = () => aiSdkAdapter('openai/gpt-5' as never);
    expect(attempt).toThrow(
      /expected an AI SDK language model object .* got the string "openai\/gpt-5"/,
    );
    try {
      aiSdkAdapter({
        specificationVersion: 'v2',
        provider: 'x',
        modelId: 'y',
        doStream() {},
      } as never);
    } catch (error) {
      expect(UnsupportedModelError.isInstance(error)).toBe(true);
      expect((error as UnsupportedModelError).specificationVersion).toBe('v2');
    }
    expect.assertions(3);
  });
});

describe('aiSdkAdapter failures', () => {
  it('fails with auth, not retryable, on a 401', async () => {
    const { completion } = await runOne({
      error: { status: 401, body: { error: { message: 'bad key' } } },
    });
    expect(failure(completion)).toEqual({
      type: 'step.failed',
      error: {
        kind: 'auth',
        retryable: false,
        status: 401,
        message: 'Scripted provider error (HTTP 401)',
      },
      observedOutput: false,
    });
  });

  it('fails with rate_limit and retryAfterMs 2000 on a 429 with Retry-After: 2', async () => {
    const { completion } = await runOne({
      error: { status: 429, headers: { 'retry-after': '2' } },
    });
    expect(failure(completion).error).toMatchObject({
      kind: 'rate_limit',
      retryable: true,
      retryAfterMs: 2000,
    });
  });

  it('fails retryably on a 503', async () => {
    const { completion } = await runOne({ error: { status: 503 } });
    expect(failure(completion).error).toMatchObject({
      kind: 'overloaded',
      retryable: true,
      status: 503,
    });
  });

  it('fails with context_overflow on a context-length message', async () => {
    const { completion } = await runOne({
      error: { status: 400, message: 'prompt is too long: 210000 tokens > 200000 maximum' },
    });
    expect(failure(completion).error).toMatchObject({ kind: 'context_overflow', retryable: false });
  });

  it('fails as aborted when the request is aborted mid-stream', async () => {
    const controller = new AbortController();
    const step = aiSdkAdapter(scriptedModel([{ text: 'partial', stall: true }])).step(
      request({ abortSignal: controller.signal }),
    );
    for await (const event of step.events) if (event.type === 'text.delta') controller.abort();
    expect(await step.completion).toMatchObject({
      type: 'step.failed',
      error: { kind: 'aborted', retryable: false },
      observedOutput: true,
    });
  });

  it('fails as stream_interrupted with observed output when the socket resets after text', async () => {
    const { events, completion } = await runOne({ text: 'partial', disconnect: true });
    expect(events).toEqual([{ type: 'text.delta', text: 'partial' }]);
    expect(failure(completion)).toEqual({
      type: 'step.failed',
      error: {
        kind: 'stream_interrupted',
        retryable: true,
        message: 'terminated: read ECONNRESET',
      },
      observedOutput: true,
    });
  });

  it('fails as stream_interrupted when the stream ends with finish reason interrupted', async () => {
    const { completion } = await runOne({ text: 'half', finishReason: 'interrupted' });
    expect(failure(completion)).toEqual({
      type: 'step.failed',
      error: {
        kind: 'stream_interrupted',
        retryable: true,
        message: 'The provider stream ended with finish reason "interrupted".',
      },
      observedOutput: true,
    });
  });

  it('fails as malformed_tool_call when Gemini rejects the call as malformed', async () => {
    const { completion } = await runOne({
      finishReason: { unified: 'error', raw: 'MALFORMED_FUNCTION_CALL' },
    });
    expect(failure(completion).error).toEqual({
      kind: 'malformed_tool_call',
      retryable: false,
      message:
        'The provider rejected the model\'s tool call as malformed (provider reason "MALFORMED_FUNCTION_CALL").',
    });
  });

  it('fails without rejecting when the model throws something unexpected', async () => {
    const model = scriptedModel([
      () => {
        throw new Error('script bug');
      },
    ]);
    const completion = await aiSdkAdapter(model).step(request()).completion;
    expect(completion).toEqual({
      type: 'step.failed',
      error: { kind: 'unknown', retryable: false, message: 'script bug' },
      observedOutput: false,
    });
  });
});
