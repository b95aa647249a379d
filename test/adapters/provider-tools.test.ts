import { createAnthropic } from '@ai-sdk/anthropic';
import { createGoogleGenerativeAI } from '@ai-sdk/google';
import { createOpenAI } from '@ai-sdk/openai';
import { createXai } from '@ai-sdk/xai';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { AiSdkLanguageModel } from '../../adapters/ai-sdk-adapter.ts';
import type { ContentPart, Fact, FactOf } from '../../events/facts.ts';
import { projectHistory } from '../../events/project-history.ts';
import type { TurnEvent } from '../../machines/effects/turn-channel.ts';
import { memoryStore } from '../../store/memory/memory-store.ts';
import { defineTool } from '../../tools/define-tool.ts';
import type { ProviderTool } from '../../tools/provider-tool.ts';
import { ToolDefinitionError } from '../../tools/tool-errors.ts';
import {
  createFakeFetch,
  loadFixture,
  type RecordedFetchRequest,
  sse,
} from '../helpers/fake-fetch.ts';
import { addTool, testRuntime } from '../runtime/runtime-helpers.ts';

/**
 * Provider-executed tools (web search) given to `createRuntime`, replayed from recordings through
 * the real provider packages: turnlog never runs them, keeps their calls and results in
 * `step.completed` content, shows them in `turn.events`, and replays them to the same provider
 * only.
 */

// biome-ignore lint/suspicious/noExplicitAny: request bodies are read ad hoc
type Body = Record<string, any>;

interface WebSearchCase {
  name: string;
  provider: string;
  model(fetch: typeof globalThis.fetch): AiSdkLanguageModel;
  webSearch(fetch: typeof globalThis.fetch): ProviderTool;
  recording: string;
  done: boolean;
  /** The tool as the provider's request carries it. */
  requestTools: unknown[];
  /** The searches the recording made, in order. */
  calls: { input: unknown }[];
  /** What the next request to the same provider carries of them. */
  replayed(body: Body): unknown;
  replayedExpected: unknown;
}

const cases: WebSearchCase[] = [
  {
    name: 'Anthropic web_search_20250305',
    provider: 'anthropic.messages',
    model: (fetch) => createAnthropic({ apiKey: 'test', fetch })('claude-sonnet-4-5'),
    webSearch: (fetch) =>
      createAnthropic({ apiKey: 'test', fetch }).tools.webSearch_20250305({ maxUses: 1 }),
    recording: 'anthropic-web-search-tool',
    done: false,
    requestTools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 1 }],
    calls: [{ input: { query: 'tech news today September 26 2025' } }],
    replayed: (body) =>
      body.messages[1].content
        .slice(0, 2)
        .map((block: Body) => [block.type, block.id ?? block.tool_use_id]),
    replayedExpected: [
      ['server_tool_use', 'srvtoolu_01Bj5uzzLcYG5hfueSLcDH8k'],
      ['web_search_tool_result', 'srvtoolu_01Bj5uzzLcYG5hfueSLcDH8k'],
    ],
  },
  {
    name: 'OpenAI web_search (Responses)',
    provider: 'openai.responses',
    model: (fetch) => createOpenAI({ apiKey: 'test', fetch })('gpt-5'),
    webSearch: (fetch) => createOpenAI({ apiKey: 'test', fetch }).tools.webSearch({}),
    recording: 'openai-web-search-tool',
    done: true,
    requestTools: [{ type: 'web_search' }],
    calls: Array.from({ length: 6 }, () => ({ input: {} })),
    replayed: (body) =>
      body.input
        .filter((item: Body) => item.type === 'item_reference' && item.id.startsWith('ws_'))
        .map((item: Body) => item.id),
    replayedExpected: 'the call ids',
  },
  {
    name: 'xAI web_search (Responses)',
    provider: 'xai.responses',
    model: (fetch) => createXai({ apiKey: 'test', fetch })('grok-4'),
    webSearch: (fetch) => createXai({ apiKey: 'test', fetch }).tools.webSearch({}),
    recording: 'xai-web-search-tool',
    done: false,
    requestTools: [{ type: 'web_search' }],
    calls: [{ input: { query: 'what is xAI', num_results: 5 } }],
    // @ai-sdk/xai sends an earlier response back as its text: nothing of the search.
    replayed: (body) => body.input.map((item: Body) => item.role),
    replayedExpected: ['user', 'assistant', 'user'],
  },
];

function providerParts(content: readonly ContentPart[]) {
  return content.filter(
    (part) => part.type === 'provider-tool-call' || part.type === 'provider-tool-result',
  );
}

describe.each(cases)('$name given to createRuntime', (testCase) => {
  async function searched() {
    const fake = createFakeFetch(() =>
      sse(loadFixture(testCase.recording), { done: testCase.done }),
    );
    const { tool: add, executions } = addTool();
    const runtime = testRuntime(memoryStore(), {
      model: testCase.model(fake.fetch),
      tools: { add, webSearch: testCase.webSearch(fake.fetch) },
    });
    const turn = await runtime.send({ sessionId: 's1', text: 'search the news' });
    const events: TurnEvent[] = [];
    for await (const event of turn.events) events.push(event);
    return { runtime, fake, turn, events, executions };
  }

  it('is sent with the request, never run by turnlog, and its calls and results are recorded', async () => {
    const { runtime, fake, turn, events, executions } = await searched();

    expect(await turn.done).toMatchObject({ status: 'completed', reason: 'end_turn', steps: 1 });
    const facts = await runtime.facts('s1');
    expect(facts.map((fact) => fact.type)).toEqual([
      'run.started',
      'step.started',
      'step.completed',
      'run.ended',
    ]);
    expect(((fake.requests[0] as RecordedFetchRequest).body as Body).tools.slice(1)).toEqual(
      testCase.requestTools,
    );
    const completed = facts[2] as FactOf<'step.completed'>;
    // The guard ignores the provider's calls: nothing for turnlog to prove, decide or settle.
    expect(completed.toolCalls).toEqual([]);
    expect(executions).toEqual([]);
    const parts = providerParts(completed.content);
    const calls = parts.filter((part) => part.type === 'provider-tool-call');
    const results = parts.filter((part) => part.type === 'provider-tool-result');
    expect(calls.map(({ name, input }) => ({ name, input }))).toEqual(
      testCase.calls.map(({ input }) => ({ name: 'webSearch', input })),
    );
    // Each call has its one result, after it.
    expect(results.map((result) => result.callId)).toEqual(calls.map((call) => call.callId));
    for (const result of results) {
      expect(parts.indexOf(result)).toBeGreaterThan(
        parts.findIndex((part) => part.callId === result.callId),
      );
      expect(result.isError).toBe(false);
    }
    // turn.events shows the same step.completed fact, provider parts included.
    const shown = events.find((event): event is Fact => event.type === 'step.completed');
    expect(shown).toEqual(completed);
    await runtime.close();
  });

  it('is replayed to the same provider and dropped for another', async () => {
    const { runtime, fake } = await searched();
    const facts = await runtime.facts('s1');
    const completed = facts.find((fact) => fact.type === 'step.completed');
    const parts = providerParts(completed?.type === 'step.completed' ? completed.content : []);

    const same = projectHistory(facts, { provider: testCase.provider });
    expect(
      same[1]?.role === 'assistant' && providerParts(same[1].content as ContentPart[]),
    ).toEqual(parts);
    const other = projectHistory(facts, { provider: 'another.provider' });
    expect(
      other[1]?.role === 'assistant' && providerParts(other[1].content as ContentPart[]),
    ).toEqual([]);
    expect(other[1]?.role === 'assistant' && other[1].content.length).toBeGreaterThan(0);

    const next = await runtime.send({ sessionId: 's1', text: 'and again' });
    expect(await next.done).toMatchObject({ status: 'completed' });
    const body = (fake.requests[1] as RecordedFetchRequest).body as Body;
    const expected =
      testCase.replayedExpected === 'the call ids'
        ? parts.filter((part) => part.type === 'provider-tool-call').map((part) => part.callId)
        : testCase.replayedExpected;
    expect(testCase.replayed(body)).toEqual(expected);
    await runtime.close();
  });
});

describe('provider tools in createRuntime', () => {
  it("keeps Anthropic's code execution, the caller of programmatic tool calls, in every next request", async () => {
    // One recording of 15 responses: code execution calls the app's rollDie 14 times, one call
    // per response, and its result arrives in the last response (a deferred result).
    const responses: string[][] = [[]];
    for (const line of loadFixture('anthropic-programmatic-tool-calling')) {
      responses.at(-1)?.push(line);
      if ((JSON.parse(line) as Body).type === 'message_stop') responses.push([]);
    }
    const fake = createFakeFetch((_request, index) => sse(responses[index] ?? []));
    const anthropic = createAnthropic({ apiKey: 'test', fetch: fake.fetch });
    const rolls: string[] = [];
    const rollDie = defineTool({
      description: 'Rolls the die of a player.',
      inputSchema: z.object({ player: z.string() }),
      execute: ({ player }) => {
        rolls.push(player);
        return 4;
      },
    });
    const runtime = testRuntime(memoryStore(), {
      model: anthropic('claude-sonnet-4-5'),
      tools: { rollDie, code_execution: anthropic.tools.codeExecution_20250825() },
      limits: { maxSteps: 20 },
    });
    const turn = await runtime.send({ sessionId: 's1', text: 'Play the dice game.' });

    expect(await turn.done).toMatchObject({ status: 'completed', reason: 'end_turn', steps: 15 });
    expect(rolls).toHaveLength(14);
    const completions = (await runtime.facts('s1')).filter(
      (fact): fact is FactOf<'step.completed'> => fact.type === 'step.completed',
    );
    const providerTypes = (step: FactOf<'step.completed'> | undefined) =>
      providerParts(step?.content ?? []).map((part) => [part.type, part.name, part.callId]);
    const codeExecution = 'srvtoolu_01MzSrFWsmzBdcoQkGWLyRjK';
    expect(providerTypes(completions[0])).toEqual([
      ['provider-tool-call', 'code_execution', codeExecution],
    ]);
    expect(providerTypes(completions.at(-1))).toEqual([
      ['provider-tool-result', 'code_execution', codeExecution],
    ]);
    // Every later request holds the code execution block before the call it made.
    for (const request of fake.requests.slice(1)) {
      const assistant = (request.body as Body).messages[1].content as Body[];
      expect(assistant.map((block) => [block.type, block.caller])).toEqual([
        ['text', undefined],
        ['server_tool_use', { type: 'direct' }],
        ['tool_use', { type: 'code_execution_20250825', tool_id: codeExecution }],
      ]);
    }
    await runtime.close();
  });

  it('sends Google search grounding as the googleSearch tool', async () => {
    const fake = createFakeFetch(() => sse(loadFixture('google-text')));
    const google = createGoogleGenerativeAI({ apiKey: 'test', fetch: fake.fetch });
    const runtime = testRuntime(memoryStore(), {
      model: google('gemini-2.5-flash'),
      tools: { search: google.tools.googleSearch({}) },
    });
    const turn = await runtime.send({ sessionId: 's1', text: 'news?' });
    expect(await turn.done).toMatchObject({ status: 'completed', reason: 'end_turn' });
    expect(((fake.requests[0] as RecordedFetchRequest).body as Body).tools).toEqual([
      { googleSearch: {} },
    ]);
    await runtime.close();
  });

  it('refuses a provider-defined tool the app would have to execute', () => {
    const bash = createAnthropic({ apiKey: 'test' }).tools.bash_20250124({});
    const create = () =>
      testRuntime(memoryStore(), {
        model: createAnthropic({ apiKey: 'test' })('claude-sonnet-4-5'),
        tools: { bash },
      });
    expect(create).toThrow(ToolDefinitionError);
    expect(create).toThrow(
      'Tool "bash" (anthropic.bash_20250124) is a provider-defined tool that your app must execute, and turnlog runs only its own tools; define it with defineTool({ description, inputSchema, execute }) instead',
    );
  });

  it('refuses a provider tool whose arguments are not plain JSON', () => {
    const tool: ProviderTool = {
      type: 'provider',
      id: 'openai.web_search',
      args: { filter: () => true },
      isProviderExecuted: true,
    };
    let error: unknown;
    try {
      testRuntime(memoryStore(), {
        model: createOpenAI({ apiKey: 'test' })('gpt-5'),
        tools: { webSearch: tool },
      });
    } catch (caught) {
      error = caught;
    }
    expect(ToolDefinitionError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ toolName: 'webSearch', field: 'args' });
  });
});
