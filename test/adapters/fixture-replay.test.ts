import { createGoogleGenerativeAI } from '@ai-sdk/google';
import { createOpenAI } from '@ai-sdk/openai';
import { describe, expect, it } from 'vitest';
import { aiSdkAdapter } from '../../adapters/ai-sdk-adapter.ts';
import type {
  ModelAdapter,
  ModelStepCompletion,
  ModelStepEvent,
  ModelStepRequest,
} from '../../adapters/model-adapter.ts';
import {
  createFakeFetch,
  type FakeResponse,
  loadFixture,
  splitOpenAIResponses,
  sse,
} from '../helpers/fake-fetch.ts';

const tools: ModelStepRequest['tools'] = [
  'calculator',
  'weather',
  'getWeather',
  'writeItems',
  'read_theme',
  'read_screen',
].map((name) => ({ name, description: name, inputSchema: { type: 'object' } }));

function openai(responses: FakeResponse[], api: 'responses' | 'chat' = 'responses') {
  const fake = createFakeFetch(responses);
  const provider = createOpenAI({ apiKey: 'test', fetch: fake.fetch });
  const model = api === 'chat' ? provider.chat('gpt-test') : provider('gpt-test');
  return { adapter: aiSdkAdapter(model), requests: fake.requests };
}

function google(responses: FakeResponse[]) {
  const fake = createFakeFetch(responses);
  let counter = 0;
  const provider = createGoogleGenerativeAI({
    apiKey: 'test',
    fetch: fake.fetch,
    generateId: () => `gen_${++counter}`,
  });
  return { adapter: aiSdkAdapter(provider('gemini-3-flash-preview')), requests: fake.requests };
}

async function run(
  adapter: ModelAdapter,
  messages: ModelStepRequest['messages'] = [{ role: 'user', content: 'go' }],
) {
  const step = adapter.step({ messages, tools, abortSignal: new AbortController().signal });
  const events: ModelStepEvent[] = [];
  for await (const event of step.events) events.push(event);
  return { events, completion: await step.completion };
}

function completed(completion: ModelStepCompletion) {
  if (completion.type !== 'step.completed') {
    throw new Error(`expected step.completed, got ${JSON.stringify(completion)}`);
  }
  return completion;
}

function provenCalls(completion: ModelStepCompletion) {
  if (completion.type !== 'step.completed') return [];
  return completion.toolCalls
    .filter((call) => call.proof !== null)
    .map(({ callId, name, input, proof }) => ({ callId, name, input, proof }));
}

function joined(events: ModelStepEvent[], type: ModelStepEvent['type']): string {
  return events
    .filter((event) => event.type === type)
    .map((event) => ('text' in event ? event.text : 'delta' in event ? event.delta : ''))
    .join('');
}

// biome-ignore lint/suspicious/noExplicitAny: recorded provider JSON is read ad hoc in assertions
const json = (line: string) => JSON.parse(line) as Record<string, any>;
const responsesFixture = splitOpenAIResponses(loadFixture('openai-responses-reasoning-tool-calls'));

describe('OpenAI Responses recordings through @ai-sdk/openai', () => {
  it('proves the streamed calculator call of the first response with its reasoning and usage', async () => {
    const lines = responsesFixture[0] as string[];
    const { events, completion } = await run(openai([sse(lines, { done: true })]).adapter);
    const expectedReasoning = lines
      .map(json)
      .filter((event) => event.type === 'response.reasoning_summary_text.delta')
      .map((event) => event.delta)
      .join('');
    const result = completed(completion);
    expect(result.finishReason).toEqual({ unified: 'tool-calls', raw: undefined });
    expect(result.usage).toEqual({
      inputTokens: 134,
      outputTokens: 28,
      reasoningTokens: 0,
      cachedInputTokens: 0,
    });
    expect(result.content).toHaveLength(1);
    expect(result.content[0]).toMatchObject({ type: 'reasoning', text: expectedReasoning });
    expect(result.content[0]?.providerOptions?.openai).toMatchObject({
      itemId: 'rs_01830d662ab3856501693c321405c88190be3ab04d5782d5f9',
      reasoningEncryptedContent: expect.stringMatching(/^gAAAAA/),
    });
    expect(provenCalls(result)).toEqual([
      {
        callId: json(lines[39] as string).item.call_id,
        name: 'calculator',
        input: { a: 12, b: 7, op: 'add' },
        proof: 'raw-bytes',
      },
    ]);
    const created = json(lines[0] as string).response;
    expect(result.response).toEqual({ id: created.id, modelId: created.model });
    expect(joined(events, 'reasoning.delta')).toBe(expectedReasoning);
    expect(joined(events, 'tool.input.delta')).toBe('{"a":12,"b":7,"op":"add"}');
  });

  it('proves each later calculator call and ends with the final text', async () => {
    const inputs = [];
    for (const lines of responsesFixture.slice(1, 3)) {
      const { completion } = await run(openai([sse(lines, { done: true })]).adapter);
      inputs.push(provenCalls(completion).map((call) => call.input));
    }
    expect(inputs).toEqual([[{ a: 19, b: 3, op: 'multiply' }], [{ a: 57, b: 10, op: 'multiply' }]]);
    const { completion } = await run(
      openai([sse(responsesFixture[3] as string[], { done: true })]).adapter,
    );
    const result = completed(completion);
    expect(result.finishReason.unified).toBe('stop');
    expect(result.content).toMatchObject([{ type: 'text', text: 'The final result is **570**.' }]);
    expect(result.toolCalls).toEqual([]);
    expect(result.usage).toEqual({
      inputTokens: 299,
      outputTokens: 12,
      reasoningTokens: 0,
      cachedInputTokens: 0,
    });
  });

  it('turns the insufficient_quota error event into a quota failure', async () => {
    const { completion } = await run(
      openai([sse(loadFixture('openai-responses-error'), { done: true })]).adapter,
    );
    expect(completion).toEqual({
      type: 'step.failed',
      error: {
        kind: 'quota',
        retryable: false,
        status: 429,
        message: expect.stringMatching(/^You exceeded your current quota/),
      },
      observedOutput: false,
    });
  });
});

describe('Chat Completions recordings through @ai-sdk/openai', () => {
  it('proves the xAI weather call with its reasoning and usage', async () => {
    const lines = loadFixture('openai-compatible-chat-tool-call');
    const { completion } = await run(openai([sse(lines, { done: true })], 'chat').adapter);
    const expectedReasoning = lines
      .map(json)
      .map((chunk) => chunk.choices[0]?.delta?.reasoning_content ?? '')
      .join('');
    const result = completed(completion);
    expect(result.finishReason).toEqual({ unified: 'tool-calls', raw: 'tool_calls' });
    expect(result.usage).toEqual({
      inputTokens: 307,
      outputTokens: 26,
      reasoningTokens: 227,
      cachedInputTokens: 306,
    });
    // xAI's `reasoning_content` is not part of the OpenAI Chat format @ai-sdk/openai parses.
    expect(expectedReasoning.length).toBeGreaterThan(0);
    expect(result.content).toEqual([]);
    expect(provenCalls(result)).toEqual([
      {
        callId: 'call_79382389',
        name: 'weather',
        input: { location: 'San Francisco' },
        proof: 'raw-bytes',
      },
    ]);
    expect(result.response).toEqual({
      id: '7027d986-3c59-a37a-9a5f-50713e01c8a6',
      modelId: 'grok-3-mini',
    });
  });

  it('streams the plain text recording as text deltas with its usage', async () => {
    const lines = loadFixture('openai-chat-text');
    const { events, completion } = await run(openai([sse(lines, { done: true })], 'chat').adapter);
    const expectedText = lines
      .map(json)
      .map((chunk) => chunk.choices[0]?.delta?.content ?? '')
      .join('');
    const result = completed(completion);
    expect(result.content).toEqual([{ type: 'text', text: expectedText }]);
    expect(joined(events, 'text.delta')).toBe(expectedText);
    expect(result.usage).toEqual({
      inputTokens: 16,
      outputTokens: 300,
      reasoningTokens: 0,
      cachedInputTokens: 0,
    });
    expect(result.finishReason).toEqual({ unified: 'stop', raw: 'stop' });
  });
});

describe('Gemini recordings through @ai-sdk/google', () => {
  it('proves the missing-terminal streamed call with the complete operations array', async () => {
    const { completion } = await run(
      google([sse(loadFixture('google-stream-missing-terminal-function-call'))]).adapter,
    );
    expect(provenCalls(completion)).toEqual([
      {
        callId: 'gen_1',
        name: 'writeItems',
        input: {
          operations: [
            { action: 'add', description: 'Fresh red apple', itemid: 'apple_001', price: 0.5 },
            { action: 'add', description: 'Ripe yellow banana', itemid: 'banana_001', price: 0.3 },
          ],
        },
        proof: 'raw-bytes',
      },
    ]);
    expect(completed(completion).usage).toEqual({
      inputTokens: 54,
      outputTokens: 195,
      reasoningTokens: 121,
      // @ai-sdk/google reports an absent cachedContentTokenCount as 0; the adapter passes it on.
      cachedInputTokens: 0,
    });
  });

  it('proves the no-argument call atomically beside its streamed siblings', async () => {
    const { completion } = await run(
      google([sse(loadFixture('google-stream-no-args-tool-call'))]).adapter,
    );
    const result = completed(completion);
    expect(provenCalls(result)).toEqual([
      { callId: 'gen_1', name: 'read_theme', input: {}, proof: 'atomic' },
      { callId: 'gen_2', name: 'read_screen', input: { id: 'A' }, proof: 'raw-bytes' },
      { callId: 'gen_3', name: 'read_screen', input: { id: 'B' }, proof: 'raw-bytes' },
      { callId: 'gen_4', name: 'read_screen', input: { id: 'C' }, proof: 'raw-bytes' },
    ]);
    expect(result.toolCalls[0]?.providerOptions?.google?.thoughtSignature).toMatch(/^AY89a18a8/);
    expect(result.content.map((part) => part.type)).toEqual(['reasoning']);
  });

  it('proves both streamed getWeather calls', async () => {
    const { completion } = await run(
      google([sse(loadFixture('google-stream-tool-call-arguments'))]).adapter,
    );
    expect(provenCalls(completion)).toEqual([
      { callId: 'gen_1', name: 'getWeather', input: { location: 'Boston' }, proof: 'raw-bytes' },
      {
        callId: 'gen_2',
        name: 'getWeather',
        input: { location: 'San Francisco' },
        proof: 'raw-bytes',
      },
    ]);
  });

  it.each(['google-tool-call', 'google-tool-call-gemini3'])(
    'proves the whole function call of %s from its single argument delta',
    async (fixture) => {
      const { completion } = await run(google([sse(loadFixture(fixture))]).adapter);
      const result = completed(completion);
      expect(provenCalls(result)).toEqual([
        {
          callId: 'gen_1',
          name: 'weather',
          input: { location: 'San Francisco' },
          proof: 'raw-bytes',
        },
      ]);
      expect(result.finishReason).toEqual({ unified: 'tool-calls', raw: 'STOP' });
      expect(result.toolCalls[0]?.providerOptions?.google?.thoughtSignature).toMatch(/^E/);
    },
  );

  it.each(['google-text', 'google-reasoning-gemini3'])(
    'keeps the text of %s with its thought signature',
    async (fixture) => {
      const lines = loadFixture(fixture);
      const parts = lines.flatMap((line) => json(line).candidates[0].content.parts);
      const { completion } = await run(google([sse(lines)]).adapter);
      const result = completed(completion);
      expect(result.content).toEqual([
        {
          type: 'text',
          text: parts.map((part: { text: string }) => part.text).join(''),
          providerOptions: {
            google: {
              thoughtSignature: parts.find(
                (part: { thoughtSignature?: string }) => part.thoughtSignature,
              ).thoughtSignature,
            },
          },
        },
      ]);
      expect(result.finishReason).toEqual({ unified: 'stop', raw: 'STOP' });
    },
  );
});

describe('every tool-call recording cut after each line', () => {
  const recordings: {
    name: string;
    lines: string[];
    serve: (lines: string[]) => { adapter: ModelAdapter };
    isFinish: (line: string) => boolean;
  }[] = [
    ...responsesFixture.slice(0, 3).map((lines, index) => ({
      name: `openai-responses-reasoning-tool-calls #${index + 1}`,
      lines,
      serve: (cut: string[]) => openai([sse(cut)]),
      isFinish: (line: string) => json(line).type === 'response.completed',
    })),
    {
      name: 'openai-compatible-chat-tool-call',
      lines: loadFixture('openai-compatible-chat-tool-call'),
      serve: (cut) => openai([sse(cut)], 'chat'),
      isFinish: (line) => json(line).choices[0]?.finish_reason != null,
    },
    ...[
      'google-tool-call',
      'google-tool-call-gemini3',
      'google-stream-no-args-tool-call',
      'google-stream-tool-call-arguments',
      'google-stream-missing-terminal-function-call',
    ].map((name) => ({
      name,
      lines: loadFixture(name),
      serve: (cut: string[]) => google([sse(cut)]),
      isFinish: (line: string) => json(line).candidates[0]?.finishReason != null,
    })),
  ];

  it.each(recordings)(
    'proves no call of $name unless the finish had arrived',
    async (recording) => {
      const { completion: full } = await run(recording.serve(recording.lines).adapter);
      const fullProof = provenCalls(full);
      expect(fullProof.length).toBeGreaterThan(0);
      const finishLine = recording.lines.findIndex(recording.isFinish);
      expect(finishLine).toBeGreaterThanOrEqual(0);
      const outcomes: { cut: number; proven: number }[] = [];
      for (let cut = 1; cut <= recording.lines.length; cut += 1) {
        const { completion } = await run(recording.serve(recording.lines.slice(0, cut)).adapter);
        outcomes.push({ cut, proven: provenCalls(completion).length });
        if (cut > finishLine) expect(provenCalls(completion)).toEqual(fullProof);
      }
      expect(
        outcomes.filter((outcome) => outcome.proven > 0).map((outcome) => outcome.cut),
      ).toEqual(
        outcomes.filter((outcome) => outcome.cut > finishLine).map((outcome) => outcome.cut),
      );
    },
  );
});
