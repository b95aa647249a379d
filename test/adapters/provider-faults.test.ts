import { createGoogleGenerativeAI } from '@ai-sdk/google';
import { createOpenAI } from '@ai-sdk/openai';
import { describe, expect, it } from 'vitest';
import { aiSdkAdapter } from '../../adapters/ai-sdk-adapter.ts';
import type { ModelStepCompletion, ModelStepRequest } from '../../adapters/model-adapter.ts';
import {
  createFakeFetch,
  type FakeResponse,
  geminiFinishReason,
  googleError,
  loadFixture,
  openaiError,
  openaiIncomplete,
  splitOpenAIResponses,
  sse,
} from '../helpers/fake-fetch.ts';

const tools: ModelStepRequest['tools'] = ['calculator', 'getWeather'].map((name) => ({
  name,
  description: name,
  inputSchema: { type: 'object' },
}));
const chatText = loadFixture('openai-chat-text');
const firstResponse = splitOpenAIResponses(
  loadFixture('openai-responses-reasoning-tool-calls'),
)[0] as string[];

function openaiStep(
  response: FakeResponse,
  options: { api?: 'chat' | 'responses'; abort?: AbortController } = {},
) {
  const { fetch } = createFakeFetch([response]);
  const provider = createOpenAI({ apiKey: 'test', fetch });
  const adapter = aiSdkAdapter(
    options.api === 'chat' ? provider.chat('gpt-test') : provider('gpt-test'),
  );
  return adapter.step({
    messages: [{ role: 'user', content: 'go' }],
    tools,
    abortSignal: (options.abort ?? new AbortController()).signal,
  });
}

async function openaiCompletion(response: FakeResponse, api: 'chat' | 'responses' = 'chat') {
  return openaiStep(response, { api }).completion;
}

async function googleCompletion(response: FakeResponse): Promise<ModelStepCompletion> {
  const { fetch } = createFakeFetch([response]);
  let counter = 0;
  const provider = createGoogleGenerativeAI({
    apiKey: 'test',
    fetch,
    generateId: () => `gen_${++counter}`,
  });
  const adapter = aiSdkAdapter(provider('gemini-3-flash-preview'));
  return adapter.step({
    messages: [{ role: 'user', content: 'go' }],
    tools,
    abortSignal: new AbortController().signal,
  }).completion;
}

describe('HTTP failures through the real provider packages', () => {
  it('classifies 401 as auth, not retryable, without echoing the key', async () => {
    const completion = await openaiCompletion(
      openaiError(401, {
        message:
          'Incorrect API key provided: sk-proj-abcdefghijklmnop1234. You can find your API key at …',
        type: 'invalid_request_error',
        code: 'invalid_api_key',
      }),
    );
    expect(completion).toEqual({
      type: 'step.failed',
      error: {
        kind: 'auth',
        retryable: false,
        status: 401,
        message: 'Incorrect API key provided: [redacted]. You can find your API key at …',
      },
      observedOutput: false,
    });
  });

  it('classifies 429 with Retry-After: 2 as rate_limit retrying after 2000 ms', async () => {
    const completion = await openaiCompletion(
      openaiError(
        429,
        { message: 'Rate limit reached', type: 'requests', code: 'rate_limit_exceeded' },
        { 'Retry-After': '2' },
      ),
    );
    expect(completion).toMatchObject({
      type: 'step.failed',
      error: { kind: 'rate_limit', retryable: true, status: 429, retryAfterMs: 2000 },
    });
  });

  it('classifies 429 without Retry-After as rate_limit with no retry delay', async () => {
    const completion = await openaiCompletion(
      openaiError(429, { message: 'Rate limit reached', type: 'requests' }),
    );
    expect(completion.type === 'step.failed' && completion.error).toEqual({
      kind: 'rate_limit',
      retryable: true,
      status: 429,
      message: 'Rate limit reached',
    });
  });

  it.each([
    [500, 'unknown'],
    [503, 'overloaded'],
  ])('classifies %i as a retryable %s failure', async (status, kind) => {
    const completion = await openaiCompletion(
      openaiError(status, { message: 'The server had an error', type: 'server_error' }),
    );
    expect(completion).toMatchObject({
      type: 'step.failed',
      error: { kind, retryable: true, status },
    });
  });

  it('classifies an OpenAI context_length_exceeded error as context_overflow', async () => {
    const completion = await openaiCompletion(
      openaiError(400, {
        message: "This model's maximum context length is 128000 tokens.",
        type: 'invalid_request_error',
        code: 'context_length_exceeded',
      }),
    );
    expect(completion).toMatchObject({
      error: { kind: 'context_overflow', retryable: false, status: 400 },
    });
  });

  it("classifies Gemini's token-count message as context_overflow", async () => {
    const completion = await googleCompletion(
      googleError(400, {
        status: 'INVALID_ARGUMENT',
        message:
          'The input token count (1048577) exceeds the maximum number of tokens allowed (1048576).',
      }),
    );
    expect(completion).toMatchObject({
      error: { kind: 'context_overflow', retryable: false, status: 400 },
    });
  });

  it("takes Gemini's RetryInfo delay for a RESOURCE_EXHAUSTED error", async () => {
    const completion = await googleCompletion(
      googleError(429, {
        status: 'RESOURCE_EXHAUSTED',
        message: 'Resource has been exhausted',
        retryDelay: '7s',
      }),
    );
    expect(completion).toMatchObject({
      error: { kind: 'rate_limit', retryable: true, retryAfterMs: 7000 },
    });
  });
});

describe('broken streams through the real provider packages', () => {
  it('classifies a connection refused before any byte as a retryable network failure', async () => {
    const completion = await openaiCompletion({ kind: 'connection-error', code: 'ECONNREFUSED' });
    expect(completion).toMatchObject({
      type: 'step.failed',
      error: { kind: 'network', retryable: true },
      observedOutput: false,
    });
  });

  it('classifies a reset before the first frame as network with no observed output', async () => {
    const completion = await openaiCompletion(
      sse(chatText, { fault: { kind: 'reset', afterLines: 0 } }),
    );
    expect(completion).toMatchObject({
      error: { kind: 'network', retryable: true },
      observedOutput: false,
    });
  });

  it('classifies a socket reset after text as stream_interrupted with observed output', async () => {
    const completion = await openaiCompletion(
      sse(chatText, { fault: { kind: 'reset', afterLines: 10 } }),
    );
    expect(completion).toEqual({
      type: 'step.failed',
      error: {
        kind: 'stream_interrupted',
        retryable: true,
        message: 'Failed to process successful response: terminated: other side closed',
      },
      observedOutput: true,
    });
  });

  it('fails without any call when the socket resets in the middle of tool arguments', async () => {
    const response = sse(firstResponse, {
      fault: { kind: 'reset', afterLines: 45, midFrame: true },
    });
    const step = openaiStep(response, { api: 'responses' });
    const deltas: string[] = [];
    for await (const event of step.events)
      if (event.type === 'tool.input.delta') deltas.push(event.delta);
    expect(deltas.join('')).toBe('{"a":12,"');
    expect(await step.completion).toMatchObject({
      type: 'step.failed',
      error: { kind: 'stream_interrupted', retryable: true },
      observedOutput: true,
    });
  });

  it('fails a stream with a malformed frame', async () => {
    const completion = await openaiCompletion(
      sse(chatText, { fault: { kind: 'malformed', atLine: 3 } }),
    );
    expect(completion).toMatchObject({
      type: 'step.failed',
      error: { kind: 'stream_interrupted' },
    });
  });

  it('ends a stalled stream as aborted when the request is aborted', async () => {
    const abort = new AbortController();
    const step = openaiStep(sse(chatText, { fault: { kind: 'stall', afterLines: 5 } }), {
      api: 'chat',
      abort,
    });
    for await (const event of step.events) if (event.type === 'text.delta') abort.abort();
    expect(await step.completion).toMatchObject({
      type: 'step.failed',
      error: { kind: 'aborted', retryable: false },
      observedOutput: true,
    });
  });

  it('withholds the call of an OpenAI response.incomplete with max_output_tokens', async () => {
    const completion = await openaiCompletion(sse(openaiIncomplete(firstResponse)), 'responses');
    expect(completion).toMatchObject({
      type: 'step.completed',
      finishReason: { unified: 'length', raw: 'max_output_tokens' },
      toolCalls: [{ name: 'calculator', proof: null }],
    });
  });

  it('withholds the calls of a Gemini stream that finished with MAX_TOKENS', async () => {
    const lines = geminiFinishReason(
      loadFixture('google-stream-tool-call-arguments'),
      'MAX_TOKENS',
    );
    const completion = await googleCompletion(sse(lines));
    expect(completion).toMatchObject({
      type: 'step.completed',
      finishReason: { unified: 'length', raw: 'MAX_TOKENS' },
      toolCalls: [
        { callId: 'gen_1', proof: null },
        { callId: 'gen_2', proof: null },
      ],
    });
  });
});
