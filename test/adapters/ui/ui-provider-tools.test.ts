import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import { validateUIMessages } from 'ai';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  type TurnlogUIMessage,
  toUIMessageStream,
  toUIMessages,
} from '../../../adapters/ui/ui-message-stream.ts';
import type { ContentPart, Fact } from '../../../events/facts.ts';
import { memoryStore } from '../../../store/memory/memory-store.ts';
import { defineTool } from '../../../tools/define-tool.ts';
import type { RuntimeTools } from '../../../tools/provider-tool.ts';
import { draft, logBuilder } from '../../events/log-builder.ts';
import { createFakeFetch, loadFixture, sse } from '../../helpers/fake-fetch.ts';
import { addTool, testRuntime } from '../../runtime/runtime-helpers.ts';
import { asSent, chunkTypes, readLikeUseChat } from './ui-stream-reader.ts';

/**
 * Provider-executed tools (web search, code execution) in the UI message stream, from real
 * recordings through the provider packages: shown as the AI SDK shows them (tool parts with
 * `providerExecuted: true`, input-available then output-available / output-error), never as
 * calls turnlog ran, asked about or settled.
 */

type Part = TurnlogUIMessage['parts'][number] & Record<string, unknown>;

const toolParts = (message: TurnlogUIMessage) =>
  (message.parts as Part[]).filter((part) => part.type.startsWith('tool-'));

/** Runs the recording, reads the live stream as useChat does, and checks it against the log. */
async function streamRecording(options: {
  responses: string[][];
  done?: boolean;
  model: (fetch: typeof globalThis.fetch) => {
    model: Parameters<typeof testRuntime>[1]['model'];
    tools: RuntimeTools;
  };
}) {
  const fake = createFakeFetch((_request, index) =>
    sse(options.responses[index] ?? [], { done: options.done ?? false }),
  );
  const { model, tools } = options.model(fake.fetch);
  const runtime = testRuntime(memoryStore(), { model, tools, limits: { maxSteps: 20 } });
  const turn = await runtime.send({ sessionId: 's1', text: 'search the news' });
  const { message, chunks, errors } = await readLikeUseChat(toUIMessageStream(turn));
  const live = asSent(message as TurnlogUIMessage);
  const facts = await runtime.facts('s1');
  const user: TurnlogUIMessage = { id: 'u', role: 'user', parts: [{ type: 'text', text: 'x' }] };
  await validateUIMessages({ messages: [user, live] });
  // The message built live is the one the log rebuilds.
  expect(toUIMessages(facts).at(-1)).toEqual(live);
  await runtime.close();
  return { live, chunks, errors, facts };
}

describe('provider-executed tools in the UI message stream', () => {
  it("shows Anthropic's web search as a provider-executed part that streamed its input, then its results", async () => {
    const { live, chunks, errors } = await streamRecording({
      responses: [loadFixture('anthropic-web-search-tool')],
      model: (fetch) => {
        const anthropic = createAnthropic({ apiKey: 'test', fetch });
        return {
          model: anthropic('claude-sonnet-4-5'),
          tools: { add: addTool().tool, webSearch: anthropic.tools.webSearch_20250305() },
        };
      },
    });

    expect(errors).toEqual([]);
    // The search's input streams live; nothing shown is taken back at step.completed.
    expect(chunkTypes(chunks)).toEqual([
      'start',
      'message-metadata',
      'start-step',
      'message-metadata',
      'tool-input-start',
      'tool-input-delta',
      'text-start',
      'text-delta',
      'text-end',
      'tool-input-available',
      'tool-output-available',
      'finish-step',
      'message-metadata',
      'message-metadata',
      'finish',
    ]);
    expect(chunks.find((chunk) => chunk.type === 'tool-input-start')).toMatchObject({
      providerExecuted: true,
    });
    const [search, ...others] = toolParts(live);
    expect(others).toEqual([]);
    expect(search).toMatchObject({
      type: 'tool-webSearch',
      toolCallId: 'srvtoolu_01Bj5uzzLcYG5hfueSLcDH8k',
      state: 'output-available',
      providerExecuted: true,
      input: { query: 'tech news today September 26 2025' },
    });
    expect(search?.approval).toBeUndefined();
    expect(search?.output).toEqual(
      expect.arrayContaining([expect.objectContaining({ url: expect.any(String) })]),
    );
    // The search comes first, then the answer (the citations' 19 text blocks as one text part).
    expect(live.parts.map((part) => part.type)).toEqual(['step-start', 'tool-webSearch', 'text']);
  });

  it("shows OpenAI's six web searches, each with its output", async () => {
    const { live, errors } = await streamRecording({
      responses: [loadFixture('openai-web-search-tool')],
      done: true,
      model: (fetch) => {
        const openai = createOpenAI({ apiKey: 'test', fetch });
        return { model: openai('gpt-5'), tools: { webSearch: openai.tools.webSearch({}) } };
      },
    });

    expect(errors).toEqual([]);
    const searches = toolParts(live);
    expect(searches).toHaveLength(6);
    for (const search of searches) {
      expect(search).toMatchObject({
        type: 'tool-webSearch',
        state: 'output-available',
        providerExecuted: true,
      });
      expect(search.output).not.toBeUndefined();
    }
  });

  it("lands Anthropic's deferred code execution result on the part of the call 14 steps earlier", async () => {
    const responses: string[][] = [[]];
    for (const line of loadFixture('anthropic-programmatic-tool-calling')) {
      responses.at(-1)?.push(line);
      if ((JSON.parse(line) as { type: string }).type === 'message_stop') responses.push([]);
    }
    const rollDie = defineTool({
      description: 'Rolls the die of a player.',
      inputSchema: z.object({ player: z.string() }),
      execute: () => 4,
    });
    const { live, errors } = await streamRecording({
      responses,
      model: (fetch) => {
        const anthropic = createAnthropic({ apiKey: 'test', fetch });
        return {
          model: anthropic('claude-sonnet-4-5'),
          tools: { rollDie, code_execution: anthropic.tools.codeExecution_20250825() },
        };
      },
    });

    expect(errors).toEqual([]);
    const parts = toolParts(live);
    const codeExecution = parts.filter((part) => part.type === 'tool-code_execution');
    expect(codeExecution).toHaveLength(1);
    expect(codeExecution[0]).toMatchObject({
      toolCallId: 'srvtoolu_01MzSrFWsmzBdcoQkGWLyRjK',
      state: 'output-available',
      providerExecuted: true,
    });
    // It stays in the first step, where the call was made.
    const firstStepEnd = live.parts.findIndex(
      (part, index) => index > 0 && part.type === 'step-start',
    );
    expect(live.parts.indexOf(codeExecution[0] as never)).toBeLessThan(firstStepEnd);
    // The app's own calls are turnlog's: run with no approval (nobody was asked), never provider-executed.
    const rolls = parts.filter((part) => part.type === 'tool-rollDie');
    expect(rolls).toHaveLength(14);
    for (const roll of rolls) {
      expect(roll).toMatchObject({ state: 'output-available', output: 4 });
      expect(roll.providerExecuted).toBeUndefined();
    }
  });
});

describe('provider-executed tools rebuilt from the log', () => {
  const call = (callId: string): ContentPart => ({
    type: 'provider-tool-call',
    callId,
    name: 'webSearch',
    input: { query: 'q' },
  });
  const result = (callId: string, isError: boolean, value: unknown): ContentPart => ({
    type: 'provider-tool-result',
    callId,
    name: 'webSearch',
    result: value as never,
    isError,
  });

  function message(content: ContentPart[]): TurnlogUIMessage {
    const log = logBuilder();
    log.startRun('search');
    log.add(draft.stepStarted('step_1'));
    log.add(draft.stepCompleted('step_1', { content }));
    log.add(draft.ended());
    return toUIMessages(log.facts as Fact[]).at(-1) as TurnlogUIMessage;
  }

  it('shows a failed search as output-error with the provider error as text', async () => {
    const shown = message([
      call('srv_1'),
      result('srv_1', true, {
        type: 'web_search_tool_result_error',
        errorCode: 'max_uses_exceeded',
      }),
      { type: 'text', text: 'I could not search.' },
    ]);
    await validateUIMessages({ messages: [asSent(shown)] });
    expect(toolParts(shown)).toEqual([
      {
        type: 'tool-webSearch',
        toolCallId: 'srv_1',
        state: 'output-error',
        input: { query: 'q' },
        providerExecuted: true,
        errorText: '{"type":"web_search_tool_result_error","errorCode":"max_uses_exceeded"}',
      },
    ]);
  });

  it('shows a call whose result never came as input-available, and a result without its call on a part of its own', async () => {
    const shown = message([call('srv_1'), result('srv_2', false, 'done')]);
    await validateUIMessages({ messages: [asSent(shown)] });
    expect(
      toolParts(shown).map(({ toolCallId, state, input }) => [toolCallId, state, input]),
    ).toEqual([
      ['srv_1', 'input-available', { query: 'q' }],
      ['srv_2', 'output-available', null],
    ]);
  });
});
