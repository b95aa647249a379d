import { createAnthropic } from '@ai-sdk/anthropic';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { ContentPart, Fact } from '../../events/facts.ts';
import { projectTurn } from '../../events/project-turn.ts';
import { memoryStore } from '../../store/memory/memory-store.ts';
import { defineTool } from '../../tools/define-tool.ts';
import { createFakeFetch, loadFixture, sse } from '../helpers/fake-fetch.ts';
import { testRuntime } from '../runtime/runtime-helpers.ts';
import { draft, logBuilder } from './log-builder.ts';
import { factsToText, parseFacts } from './sample-logs.ts';
import { wellFormedLog } from './well-formed-log.ts';

/**
 * Provider-executed tools in the read model: each step's `providerTools`, never its `toolCalls`
 * (turnlog did not prove, ask about, run or settle them), from recorded provider streams and
 * built logs, the same after facts → JSON → facts.
 */

/** The projection, checked to survive the log's JSON form unchanged. */
function projected(facts: readonly Fact[]) {
  const view = projectTurn(facts);
  expect(projectTurn(parseFacts(factsToText(facts)))).toEqual(view);
  return view;
}

describe('projectTurn on provider-executed tools', () => {
  it("shows Anthropic's recorded web search with its results, and no call of turnlog's", async () => {
    const fake = createFakeFetch(() => sse(loadFixture('anthropic-web-search-tool')));
    const anthropic = createAnthropic({ apiKey: 'test', fetch: fake.fetch });
    const runtime = testRuntime(memoryStore(), {
      model: anthropic('claude-sonnet-4-5'),
      tools: { webSearch: anthropic.tools.webSearch_20250305() },
    });
    await (await runtime.send({ sessionId: 's1', text: 'news?' })).done;
    const [step] = projected(await runtime.facts('s1')).runs[0]?.steps ?? [];
    await runtime.close();

    expect(step?.toolCalls).toEqual([]);
    expect(step?.providerTools).toEqual([
      {
        callId: 'srvtoolu_01Bj5uzzLcYG5hfueSLcDH8k',
        name: 'webSearch',
        input: { query: 'tech news today September 26 2025' },
        outcome: 'success',
        result: expect.arrayContaining([expect.objectContaining({ url: expect.any(String) })]),
      },
    ]);
  });

  it("shows Anthropic's code execution on its step with the result that came 14 steps later", async () => {
    const responses: string[][] = [[]];
    for (const line of loadFixture('anthropic-programmatic-tool-calling')) {
      responses.at(-1)?.push(line);
      if ((JSON.parse(line) as { type: string }).type === 'message_stop') responses.push([]);
    }
    const fake = createFakeFetch((_request, index) => sse(responses[index] ?? []));
    const anthropic = createAnthropic({ apiKey: 'test', fetch: fake.fetch });
    const rollDie = defineTool({
      description: 'Rolls the die of a player.',
      inputSchema: z.object({ player: z.string() }),
      execute: () => 4,
    });
    const runtime = testRuntime(memoryStore(), {
      model: anthropic('claude-sonnet-4-5'),
      tools: { rollDie, code_execution: anthropic.tools.codeExecution_20250825() },
      limits: { maxSteps: 20 },
    });
    await (await runtime.send({ sessionId: 's1', text: 'Play the dice game.' })).done;
    const steps = projected(await runtime.facts('s1')).runs[0]?.steps ?? [];
    await runtime.close();

    expect(steps).toHaveLength(15);
    expect(steps[0]?.providerTools).toEqual([
      {
        callId: 'srvtoolu_01MzSrFWsmzBdcoQkGWLyRjK',
        name: 'code_execution',
        input: expect.anything(),
        outcome: 'success',
        result: expect.anything(),
      },
    ]);
    expect(steps.slice(1).flatMap((step) => step.providerTools)).toEqual([]);
    // The calls code execution made of the app's tool are turnlog's own.
    expect(
      steps.flatMap((step) => step.toolCalls.map((call) => [call.name, call.outcome])),
    ).toEqual(Array.from({ length: 14 }, () => ['rollDie', 'success']));
  });

  it('shows a failed result, a call whose result never came, and a result without its call', () => {
    const part = (type: 'call' | 'result', callId: string, isError = false): ContentPart =>
      type === 'call'
        ? { type: 'provider-tool-call', callId, name: 'webSearch', input: { query: callId } }
        : { type: 'provider-tool-result', callId, name: 'webSearch', result: 'r', isError };
    const log = logBuilder();
    log.startRun('search');
    log.add(draft.stepStarted('s1'));
    log.add(
      draft.stepCompleted('s1', {
        content: [part('call', 'a'), part('result', 'a', true), part('call', 'b')],
      }),
    );
    log.add(draft.stepStarted('s2'));
    log.add(draft.stepCompleted('s2', { content: [part('result', 'c')] }));
    log.add(draft.ended());
    const steps = projected(log.facts).runs[0]?.steps ?? [];

    expect(steps.map((step) => step.providerTools)).toEqual([
      [
        { callId: 'a', name: 'webSearch', input: { query: 'a' }, outcome: 'error', result: 'r' },
        {
          callId: 'b',
          name: 'webSearch',
          input: { query: 'b' },
          outcome: undefined,
          result: undefined,
        },
      ],
      [{ callId: 'c', name: 'webSearch', input: undefined, outcome: 'success', result: 'r' }],
    ]);
  });

  it('shows every provider call of any well-formed log once, with its result if the run has it', () => {
    fc.assert(
      fc.property(wellFormedLog, (facts) => {
        const view = projected(facts);
        for (const run of view.runs) {
          const parts = facts
            .filter((fact) => fact.runId === run.runId && fact.type === 'step.completed')
            .flatMap((fact) => (fact.type === 'step.completed' ? fact.content : []));
          const calls = parts.filter((part) => part.type === 'provider-tool-call');
          const results = parts.filter((part) => part.type === 'provider-tool-result');
          const shown = run.steps.flatMap((step) => step.providerTools);
          expect(shown.map((tool) => tool.callId).sort()).toEqual(
            [...new Set([...calls, ...results].map((part) => part.callId))].sort(),
          );
          for (const tool of shown) {
            const result = results.find((part) => part.callId === tool.callId);
            expect(tool.outcome).toBe(
              result === undefined ? undefined : result.isError ? 'error' : 'success',
            );
          }
        }
      }),
      { numRuns: 60 },
    );
  });
});
