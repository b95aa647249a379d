import { createGoogleGenerativeAI } from '@ai-sdk/google';
import { createOpenAI } from '@ai-sdk/openai';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { aiSdkAdapter } from '../../adapters/ai-sdk-adapter.ts';
import {
  fromAiSdkMessages,
  toAiSdkMessages,
  toAiSdkTools,
} from '../../adapters/message-conversion.ts';
import type {
  ModelMessage,
  ModelStepCompletion,
  ToolCallPart,
  ToolCallRecord,
} from '../../adapters/model-adapter.ts';
import { scriptedModel } from '../../adapters/scripted-model.ts';
import { createFakeFetch, loadFixture, splitOpenAIResponses, sse } from '../helpers/fake-fetch.ts';

const signal = new AbortController().signal;
const tools = ['calculator', 'weather'].map((name) => ({
  name,
  description: `the ${name} tool`,
  inputSchema: { type: 'object', properties: { location: { type: 'string' } } },
}));

const history: ModelMessage[] = [
  { role: 'system', content: 'Summary of earlier turns.' },
  { role: 'user', content: 'What is the weather?' },
  {
    role: 'assistant',
    content: [
      {
        type: 'reasoning',
        text: 'thinking',
        providerOptions: { anthropic: { signature: 'sig-1' } },
      },
      {
        type: 'reasoning',
        text: '',
        providerOptions: { openai: { itemId: 'rs_1', reasoningEncryptedContent: 'gAAA' } },
      },
      {
        type: 'text',
        text: 'Checking.',
        providerOptions: { google: { thoughtSignature: 'ts-text' } },
      },
      {
        type: 'tool-call',
        callId: 'call_1',
        name: 'weather',
        input: { location: 'Oslo' },
        providerOptions: { google: { thoughtSignature: 'ts-call' } },
      },
      { type: 'tool-call', callId: 'call_2', name: 'calculator', input: {} },
      { type: 'provider-tool-call', callId: 'srv_1', name: 'webSearch', input: { query: 'oslo' } },
      {
        type: 'provider-tool-result',
        callId: 'srv_1',
        name: 'webSearch',
        result: [{ url: 'https://example.test/oslo', title: 'Oslo' }],
        isError: false,
        providerOptions: { anthropic: { cached: true } },
      },
      { type: 'provider-tool-call', callId: 'srv_2', name: 'webSearch', input: {} },
      {
        type: 'provider-tool-result',
        callId: 'srv_2',
        name: 'webSearch',
        result: { errorCode: 'max_uses_exceeded' },
        isError: true,
      },
    ],
  },
  {
    role: 'tool',
    content: [
      { type: 'tool-result', callId: 'call_1', name: 'weather', text: 'Sunny', isError: false },
      {
        type: 'tool-result',
        callId: 'call_2',
        name: 'calculator',
        text: 'Not run: denied',
        isError: true,
      },
    ],
  },
];

function callPart(call: ToolCallRecord): ToolCallPart {
  const { callId, name, input, providerOptions } = call;
  return {
    type: 'tool-call',
    callId,
    name,
    input,
    ...(providerOptions ? { providerOptions } : {}),
  };
}

function completed(completion: ModelStepCompletion) {
  if (completion.type !== 'step.completed') throw new Error(JSON.stringify(completion));
  return completion;
}

describe('message conversion', () => {
  it('converts turnlog messages to AI SDK messages and back without loss', () => {
    const converted = toAiSdkMessages(history);
    expect(JSON.parse(JSON.stringify(fromAiSdkMessages(converted)))).toEqual(history);
    // A provider tool's call and result go back as the SDK's provider-executed parts.
    const assistant = converted[2]?.content as unknown[];
    expect(assistant.slice(5)).toEqual([
      {
        type: 'tool-call',
        toolCallId: 'srv_1',
        toolName: 'webSearch',
        input: { query: 'oslo' },
        providerExecuted: true,
      },
      {
        type: 'tool-result',
        toolCallId: 'srv_1',
        toolName: 'webSearch',
        output: { type: 'json', value: [{ url: 'https://example.test/oslo', title: 'Oslo' }] },
        providerOptions: { anthropic: { cached: true } },
      },
      {
        type: 'tool-call',
        toolCallId: 'srv_2',
        toolName: 'webSearch',
        input: {},
        providerExecuted: true,
      },
      {
        type: 'tool-result',
        toolCallId: 'srv_2',
        toolName: 'webSearch',
        output: { type: 'error-json', value: { errorCode: 'max_uses_exceeded' } },
      },
    ]);
    expect(converted[3]).toEqual({
      role: 'tool',
      content: [
        {
          type: 'tool-result',
          toolCallId: 'call_1',
          toolName: 'weather',
          output: { type: 'text', value: 'Sunny' },
        },
        {
          type: 'tool-result',
          toolCallId: 'call_2',
          toolName: 'calculator',
          output: { type: 'error-text', value: 'Not run: denied' },
        },
      ],
    });
  });

  it('converts lists that grow, shrink and change exactly as it converts each list afresh', () => {
    const pool: ModelMessage[] = [
      ...history,
      { role: 'user', content: 'And tomorrow?' },
      { role: 'assistant', content: [{ type: 'text', text: 'Rain.' }] },
    ];
    const fresh = (list: ModelMessage[]) =>
      JSON.parse(JSON.stringify(toAiSdkMessages(list.map((message) => ({ ...message })))));
    fc.assert(
      fc.property(
        fc.array(fc.array(fc.nat({ max: pool.length - 1 }), { maxLength: 8 }), { maxLength: 10 }),
        (lists) => {
          // Every list starts with the same first message object, as a run's requests do.
          for (const picks of lists) {
            const list = [
              pool[0] as ModelMessage,
              ...picks.map((pick) => pool[pick] as ModelMessage),
            ];
            expect(JSON.parse(JSON.stringify(toAiSdkMessages(list)))).toEqual(fresh(list));
          }
        },
      ),
      { numRuns: 200 },
    );
  });

  it('converts a message object once: the same object gives the same AI SDK message', () => {
    const first = toAiSdkMessages(history);
    const again = toAiSdkMessages([...history, { role: 'user', content: 'And tomorrow?' }]);
    expect(again.slice(0, history.length)).toEqual(first);
    first.forEach((message, index) => {
      expect(again[index]).toBe(message);
    });
    // A new object with the same content is a new message.
    expect(toAiSdkMessages([{ ...(history[1] as ModelMessage) }])[0]).not.toBe(first[1]);
  });

  it('hands the same AI SDK messages to every request: the SDK does not change them', async () => {
    const deepFreeze = (value: unknown): void => {
      if (typeof value !== 'object' || value === null || Object.isFrozen(value)) return;
      Object.freeze(value);
      for (const item of Object.values(value)) deepFreeze(item);
    };
    // Reused messages are frozen: an SDK that wrote to one would throw (strict mode) and fail the step.
    for (const message of toAiSdkMessages(history)) deepFreeze(message);
    const model = scriptedModel([{ text: 'one' }, { text: 'two' }]);
    const adapter = aiSdkAdapter(model);
    for (const expected of ['one', 'two']) {
      const completion = completed(
        await adapter.step({ messages: history, tools, abortSignal: signal }).completion,
      );
      expect(completion.content).toEqual([{ type: 'text', text: expected }]);
    }
    expect(model.requests[1]?.prompt).toEqual(model.requests[0]?.prompt);
  });

  it('hands the tools over as schemas without an execute function', () => {
    const toolSet = toAiSdkTools(tools);
    expect(Object.keys(toolSet)).toEqual(['calculator', 'weather']);
    for (const tool of Object.values(toolSet)) {
      expect(tool).not.toHaveProperty('execute');
      expect(tool.description).toMatch(/^the /);
    }
  });

  it('hands a provider tool over as its id and arguments, without an execute function', () => {
    const toolSet = toAiSdkTools([
      {
        type: 'provider',
        name: 'webSearch',
        id: 'openai.web_search',
        args: { searchContextSize: 'low' },
      },
    ]);
    expect(toolSet.webSearch).toMatchObject({
      type: 'provider',
      id: 'openai.web_search',
      args: { searchContextSize: 'low' },
      isProviderExecuted: true,
    });
    expect(toolSet.webSearch).not.toHaveProperty('execute');
  });

  it('replays signed reasoning and text to the model exactly as they were produced', async () => {
    const model = scriptedModel([
      {
        reasoning: { text: 'deep thought', signature: 'sig-replay' },
        text: 'the answer',
        usage: { inputTokens: 1, outputTokens: 2, reasoningTokens: 1 },
      },
      { text: 'next' },
    ]);
    const adapter = aiSdkAdapter(model);
    const first = completed(
      await adapter.step({
        messages: [{ role: 'user', content: 'q' }],
        tools: [],
        abortSignal: signal,
      }).completion,
    );
    expect(first.usage).toEqual({
      inputTokens: 1,
      outputTokens: 2,
      reasoningTokens: 1,
      cachedInputTokens: undefined,
    });
    expect(first.content).toEqual([
      {
        type: 'reasoning',
        text: 'deep thought',
        providerOptions: { scripted: { signature: 'sig-replay' } },
      },
      { type: 'text', text: 'the answer' },
    ]);

    const messages: ModelMessage[] = [
      { role: 'user', content: 'q' },
      { role: 'assistant', content: first.content },
      { role: 'user', content: 'and then?' },
    ];
    await adapter.step({ messages, tools: [], abortSignal: signal }).completion;
    const assistant = model.requests[1]?.prompt.find((message) => message.role === 'assistant');
    expect(JSON.parse(JSON.stringify(assistant?.content))).toEqual([
      {
        type: 'reasoning',
        text: 'deep thought',
        providerOptions: { scripted: { signature: 'sig-replay' } },
      },
      { type: 'text', text: 'the answer' },
    ]);
  });

  it("sends a Gemini call's thought signature back with the call and its error result", async () => {
    const fake = createFakeFetch([
      sse(loadFixture('google-tool-call')),
      sse(loadFixture('google-text')),
    ]);
    const provider = createGoogleGenerativeAI({
      apiKey: 'test',
      fetch: fake.fetch,
      generateId: () => 'gen_1',
    });
    const adapter = aiSdkAdapter(provider('gemini-3-pro-preview'));
    const first = completed(
      await adapter.step({ messages: [{ role: 'user', content: 'q' }], tools, abortSignal: signal })
        .completion,
    );
    const [call] = first.toolCalls;
    if (call === undefined) throw new Error('expected a call');
    await adapter.step({
      messages: [
        { role: 'user', content: 'q' },
        { role: 'assistant', content: [callPart(call)] },
        {
          role: 'tool',
          content: [
            {
              type: 'tool-result',
              callId: call.callId,
              name: call.name,
              text: 'timeout',
              isError: true,
            },
          ],
        },
      ],
      tools,
      abortSignal: signal,
    }).completion;
    const body = fake.requests[1]?.body as {
      contents: { role: string; parts: Record<string, unknown>[] }[];
    };
    expect(body.contents.slice(1)).toEqual([
      {
        role: 'model',
        parts: [
          {
            functionCall: { id: 'gen_1', name: 'weather', args: { location: 'San Francisco' } },
            thoughtSignature: call.providerOptions?.google?.thoughtSignature,
          },
        ],
      },
      {
        role: 'user',
        parts: [
          {
            functionResponse: {
              id: 'gen_1',
              name: 'weather',
              response: { name: 'weather', error: 'timeout' },
            },
          },
        ],
      },
    ]);
  });

  it('sends OpenAI reasoning back by its item id, followed by the call and its output', async () => {
    const responses = splitOpenAIResponses(loadFixture('openai-responses-reasoning-tool-calls'));
    const fake = createFakeFetch([
      sse(responses[0] as string[], { done: true }),
      sse(responses[1] as string[], { done: true }),
    ]);
    const adapter = aiSdkAdapter(createOpenAI({ apiKey: 'test', fetch: fake.fetch })('gpt-test'));
    const first = completed(
      await adapter.step({ messages: [{ role: 'user', content: 'q' }], tools, abortSignal: signal })
        .completion,
    );
    const [call] = first.toolCalls;
    if (call === undefined) throw new Error('expected a call');
    await adapter.step({
      messages: [
        { role: 'user', content: 'q' },
        { role: 'assistant', content: [...first.content, callPart(call)] },
        {
          role: 'tool',
          content: [
            {
              type: 'tool-result',
              callId: call.callId,
              name: call.name,
              text: '19',
              isError: false,
            },
          ],
        },
      ],
      tools,
      abortSignal: signal,
    }).completion;
    const body = fake.requests[1]?.body as { input: unknown[] };
    expect(body.input.slice(1)).toEqual([
      { type: 'item_reference', id: 'rs_01830d662ab3856501693c321405c88190be3ab04d5782d5f9' },
      {
        type: 'function_call',
        call_id: call.callId,
        name: 'calculator',
        arguments: '{"a":12,"b":7,"op":"add"}',
      },
      { type: 'function_call_output', call_id: call.callId, output: '19' },
    ]);
  });
});
