import { experimental_streamLanguageModelCall as streamLanguageModelCall } from 'ai';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { aiSdkAdapter } from '../../adapters/ai-sdk-adapter.ts';
import { toAiSdkMessages, toAiSdkTools } from '../../adapters/message-conversion.ts';
import type { ModelStepRequest } from '../../adapters/model-adapter.ts';
import { scriptedModel } from '../../adapters/scripted-model.ts';
import type { AssistantPart, ModelMessage } from '../../events/messages.ts';

// The adapter builds each request's provider prompt with the SDK's converter, converting only
// the messages a request adds (adapters/language-model-prompt.ts). Whatever the requests, the
// model must receive exactly what experimental_streamLanguageModelCall, which converts the whole
// list every time, sends it: the same call options, prompt included.

const tools: ModelStepRequest['tools'] = [
  { name: 'add', description: 'Adds', inputSchema: { type: 'object' } },
  { name: 'look', description: 'Looks', inputSchema: { type: 'object' } },
];

const options = fc.option(
  fc.constantFrom({ anthropic: { signature: 'sig' } }, { openai: { itemId: 'item_1' } }),
  { nil: undefined },
);
const text = fc.constantFrom('', 'hi', 'a longer text', ' ');

/** A piece of history the SDK accepts: calls are followed by their results. */
const piece: fc.Arbitrary<ModelMessage[]> = fc.oneof(
  text.map((content) => [{ role: 'user' as const, content }]),
  // A result on its own (the SDK accepts one without its call): after a tool message, merged.
  fc.constant<ModelMessage[]>([
    {
      role: 'tool',
      content: [{ type: 'tool-result', callId: 'call_9', name: 'add', text: '9', isError: false }],
    },
  ]),
  text.map((content) => [{ role: 'system' as const, content }]),
  fc
    .tuple(
      fc.array(
        fc.oneof(
          fc.record({ type: fc.constant('text' as const), text, providerOptions: options }),
          fc.record({ type: fc.constant('reasoning' as const), text, providerOptions: options }),
          fc.record({
            type: fc.constant('provider-tool-call' as const),
            callId: fc.constantFrom('ws_1', 'ws_2'),
            name: fc.constant('web_search'),
            input: fc.constant({ q: 'x' }),
            providerOptions: options,
          }),
        ),
        { maxLength: 3 },
      ),
      fc.array(fc.constantFrom('call_1', 'call_2', 'call_3'), { maxLength: 3 }),
      fc.boolean(),
      // A result split over two tool messages in a row (the SDK merges them).
      fc.boolean(),
    )
    .map(([parts, callIds, isError, split]) => {
      const ids = [...new Set(callIds)];
      const content: AssistantPart[] = [
        ...parts.map((part) => withoutUndefined(part) as AssistantPart),
        ...ids.map((callId) => ({
          type: 'tool-call' as const,
          callId,
          name: 'add',
          input: { a: 1, b: 2 },
        })),
      ];
      if (ids.length === 0) return [{ role: 'assistant' as const, content }];
      const results = ids.map((callId) => ({
        type: 'tool-result' as const,
        callId,
        name: 'add',
        text: '3',
        isError,
      }));
      const tool = (part: (typeof results)[number][]) => ({ role: 'tool' as const, content: part });
      return [
        { role: 'assistant' as const, content },
        ...(split && results.length > 1
          ? [tool(results.slice(0, 1)), tool(results.slice(1))]
          : [tool(results)]),
      ];
    }),
);

function withoutUndefined(value: Record<string, unknown>) {
  return Object.fromEntries(Object.entries(value).filter(([, item]) => item !== undefined));
}

/** How each request's messages come from the previous one's (the same objects, mostly). */
const change = fc.oneof(
  {
    weight: 6,
    arbitrary: fc
      .array(piece, { minLength: 1, maxLength: 3 })
      .map((pieces) => ({ kind: 'append' as const, messages: pieces.flat() })),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'same' as const }) },
  { weight: 1, arbitrary: fc.nat().map((at) => ({ kind: 'copy-one' as const, at })) },
  { weight: 1, arbitrary: fc.nat().map((at) => ({ kind: 'cut' as const, at })) },
);

async function sdkCall(messages: ModelMessage[], request: Omit<ModelStepRequest, 'abortSignal'>) {
  const model = scriptedModel([{ text: 'ok' }]);
  try {
    const { stream } = await streamLanguageModelCall({
      model,
      instructions: request.system,
      messages: toAiSdkMessages(messages),
      allowSystemInMessages: true,
      tools: toAiSdkTools(request.tools),
      maxOutputTokens: request.maxOutputTokens,
      providerOptions: request.providerOptions,
    });
    for await (const _part of stream);
  } catch (error) {
    return { error: (error as Error).name };
  }
  return { sent: model.requests[0] };
}

describe('the provider prompt, converted once per message', () => {
  it('is what experimental_streamLanguageModelCall sends, request after request', async () => {
    await fc.assert(
      fc.asyncProperty(
        piece,
        fc.array(change, { minLength: 1, maxLength: 8 }),
        fc.option(fc.constantFrom('Be brief.', ''), { nil: undefined }),
        async (start, changes, system) => {
          const model = scriptedModel(() => ({ text: 'ok' }));
          const adapter = aiSdkAdapter(model);
          let messages = start;
          for (const step of [{ kind: 'same' as const }, ...changes]) {
            if (step.kind === 'append') messages = [...messages, ...step.messages];
            else if (step.kind === 'copy-one' && messages.length > 0) {
              // An equal message that is another object: the list is converted from the start.
              const at = step.at % messages.length;
              messages = messages.map((message, index) =>
                index === at ? structuredClone(message) : message,
              );
            } else if (step.kind === 'cut' && messages.length > 1) {
              messages = messages.slice(0, 1 + (step.at % (messages.length - 1)));
            }
            const request = { system, messages, tools, maxOutputTokens: 100 };
            const before = model.requests.length;
            const completion = await adapter.step({
              ...request,
              abortSignal: new AbortController().signal,
            }).completion;
            const expected = await sdkCall(messages, request);
            if ('error' in expected) {
              expect(completion.type).toBe('step.failed');
              expect(model.requests).toHaveLength(before);
            } else {
              expect(completion.type).toBe('step.completed');
              expect(model.requests.at(-1)).toEqual(expected.sent);
            }
          }
        },
      ),
      { numRuns: 150 },
    );
  });

  it("gives concurrent requests over the same messages the SDK's prompt each", async () => {
    const model = scriptedModel(() => ({ text: 'ok' }));
    const adapter = aiSdkAdapter(model);
    const abortSignal = new AbortController().signal;
    const first: ModelMessage[] = [{ role: 'user', content: 'go' }];
    const longer: ModelMessage[] = [
      ...first,
      { role: 'assistant', content: [{ type: 'text', text: 'a' }] },
    ];
    const longest: ModelMessage[] = [...longer, { role: 'user', content: 'more' }];
    await Promise.all(
      [longer, longest, longer, first].map(
        (messages) => adapter.step({ messages, tools, abortSignal }).completion,
      ),
    );
    await adapter.step({ messages: longest, tools, abortSignal }).completion;
    // Concurrent requests reach the model in any order: compare the prompts as a set.
    const expected: string[] = [];
    for (const messages of [longer, longest, longer, first, longest]) {
      const call = await sdkCall(messages, { messages, tools });
      expected.push(JSON.stringify('sent' in call ? call.sent?.prompt : undefined));
    }
    const received = model.requests.map((request) => JSON.stringify(request.prompt));
    expect(received.slice(0, 4).sort()).toEqual(expected.slice(0, 4).sort());
    expect(received[4]).toBe(expected[4]);
  });

  it('freezes what later requests share, and gives each request its own list', async () => {
    const model = scriptedModel(() => ({ text: 'ok' }));
    const adapter = aiSdkAdapter(model);
    const first: ModelMessage[] = [{ role: 'user', content: 'go' }];
    const abortSignal = new AbortController().signal;
    await adapter.step({ messages: first, tools, abortSignal }).completion;
    await adapter.step({
      messages: [...first, { role: 'assistant', content: [{ type: 'text', text: 'ok' }] }],
      tools,
      abortSignal,
    }).completion;
    const [one, two] = model.requests.map((request) => request.prompt);
    expect(one).not.toBe(two);
    expect(two?.[0]).toBe(one?.[0]);
    expect(Object.isFrozen(two?.[0])).toBe(true);
    expect(Object.isFrozen(two?.[1]?.content)).toBe(true);
  });
});
