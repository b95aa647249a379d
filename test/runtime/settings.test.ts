import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { aiSdkAdapter } from '../../adapters/ai-sdk-adapter.ts';
import { scriptedModel } from '../../adapters/scripted-model.ts';
import { sequentialIds } from '../../events/ids.ts';
import { InvalidArgumentError } from '../../runtime-errors.ts';
import { memoryStore } from '../../store/memory/memory-store.ts';
import { defineTool } from '../../tools/define-tool.ts';
import { deferred, testRuntime } from './runtime-helpers.ts';

/** The sampling fields and provider options of a recorded provider call. */
function sentSettings(call: Record<string, unknown> | undefined) {
  const { temperature, topP, topK, seed, stopSequences, maxOutputTokens, providerOptions } =
    call ?? {};
  return { temperature, topP, topK, seed, stopSequences, maxOutputTokens, providerOptions };
}

describe('settings', () => {
  it("sends createRuntime's settings with every request and records them in run.started", async () => {
    const store = memoryStore();
    const model = scriptedModel([{ text: 'Hello.' }]);
    const runtime = testRuntime(store, {
      model,
      settings: {
        temperature: 0.2,
        seed: 7,
        stopSequences: ['END'],
        maxOutputTokens: 300,
        providerOptions: { openai: { reasoningEffort: 'low' } },
      },
    });
    const turn = await runtime.send({ sessionId: 's1', text: 'Hi' });
    expect(await turn.done).toMatchObject({ status: 'completed', text: 'Hello.' });

    expect(model.requests).toHaveLength(1);
    expect(sentSettings(model.requests[0])).toEqual({
      temperature: 0.2,
      topP: undefined,
      topK: undefined,
      seed: 7,
      stopSequences: ['END'],
      maxOutputTokens: 300,
      providerOptions: { openai: { reasoningEffort: 'low' } },
    });
    const [started] = await runtime.facts('s1');
    expect(started).toMatchObject({
      type: 'run.started',
      limits: { maxOutputTokens: 300 },
      settings: {
        temperature: 0.2,
        seed: 7,
        stopSequences: ['END'],
        providerOptions: { openai: { reasoningEffort: 'low' } },
      },
    });
    expect(started && 'settings' in started && 'maxOutputTokens' in (started.settings ?? {})).toBe(
      false,
    );
  });

  it("overrides the runtime's settings for one run with send's, field by field and provider by provider", async () => {
    const model = scriptedModel([{ text: 'One.' }, { text: 'Two.' }]);
    const runtime = testRuntime(memoryStore(), {
      model,
      limits: { maxOutputTokens: 500 },
      settings: {
        temperature: 0.2,
        topP: 0.9,
        providerOptions: { openai: { reasoningEffort: 'low' }, google: { thinkingBudget: 0 } },
      },
    });
    const first = await runtime.send({
      sessionId: 's1',
      text: 'Hi',
      settings: {
        temperature: 1,
        topK: 40,
        maxOutputTokens: 100,
        providerOptions: { openai: { reasoningEffort: 'high' } },
      },
    });
    await first.done;
    const second = await runtime.send({ sessionId: 's1', text: 'Again' });
    await second.done;

    expect(sentSettings(model.requests[0])).toEqual({
      temperature: 1,
      topP: 0.9,
      topK: 40,
      seed: undefined,
      stopSequences: undefined,
      maxOutputTokens: 100,
      providerOptions: { openai: { reasoningEffort: 'high' }, google: { thinkingBudget: 0 } },
    });
    // The next run is back to the runtime's settings.
    expect(sentSettings(model.requests[1])).toEqual({
      temperature: 0.2,
      topP: 0.9,
      topK: undefined,
      seed: undefined,
      stopSequences: undefined,
      maxOutputTokens: 500,
      providerOptions: { openai: { reasoningEffort: 'low' }, google: { thinkingBudget: 0 } },
    });
  });

  it('sends no settings and records none when none are given', async () => {
    const model = scriptedModel([{ text: 'Hello.' }]);
    const runtime = testRuntime(memoryStore(), { model });
    await (await runtime.send({ sessionId: 's1', text: 'Hi' })).done;
    expect(sentSettings(model.requests[0])).toEqual({
      temperature: undefined,
      topP: undefined,
      topK: undefined,
      seed: undefined,
      stopSequences: undefined,
      maxOutputTokens: undefined,
      providerOptions: undefined,
    });
    const [started] = await runtime.facts('s1');
    expect(started !== undefined && 'settings' in started).toBe(false);
  });

  it("lets the run's settings win over an adapter's fixed ones, field by field", async () => {
    const model = scriptedModel([{ text: 'Hello.' }]);
    const runtime = testRuntime(memoryStore(), {
      model: aiSdkAdapter(model, { settings: { temperature: 0.5, topP: 0.5, seed: 1 } }),
      settings: { temperature: 0 },
    });
    await (await runtime.send({ sessionId: 's1', text: 'Hi' })).done;
    expect(sentSettings(model.requests[0])).toMatchObject({ temperature: 0, topP: 0.5, seed: 1 });
  });

  it('resumes a recovered run with the settings its run.started recorded, not the new runtime’s', async () => {
    const store = memoryStore();
    const generateId = sequentialIds();
    const entered = deferred();
    const hangs = defineTool({
      description: 'Hangs in the first process.',
      inputSchema: z.object({}),
      execute: () => {
        entered.resolve();
        return new Promise<string>(() => {});
      },
    });
    const first = testRuntime(store, {
      generateId,
      model: scriptedModel([{ toolCalls: [{ name: 'hangs', input: {} }] }]),
      tools: { hangs },
    });
    await first.send({
      sessionId: 's1',
      text: 'go',
      settings: { temperature: 0.3, providerOptions: { anthropic: { sendReasoning: false } } },
    });
    await entered.promise;

    const model = scriptedModel([{ text: 'Done.' }]);
    const second = testRuntime(store, {
      generateId,
      model,
      tools: { hangs },
      settings: { temperature: 0.9 },
    });
    const [report] = await second.recover();
    await second.decide({ sessionId: 's1', callId: 'call_1', decision: 'report-unknown' });
    if (report?.status === 'damaged' || report === undefined) throw new Error('not resumable');
    expect(await report.turn.done).toMatchObject({ status: 'completed', text: 'Done.' });
    expect(sentSettings(model.requests[0])).toMatchObject({
      temperature: 0.3,
      providerOptions: { anthropic: { sendReasoning: false } },
    });
  });

  it('refuses bad settings where they enter, naming the field', () => {
    const model = scriptedModel([]);
    const bad = (settings: unknown) => () =>
      testRuntime(memoryStore(), { model, settings: settings as never });
    expect(bad({ temperature: Number.NaN })).toThrow(InvalidArgumentError);
    expect(bad({ temperature: 'hot' })).toThrow(/settings\.temperature/);
    expect(bad({ temprature: 0.1 })).toThrow(/temprature/);
    expect(bad({ maxOutputTokens: 0 })).toThrow(/settings\.maxOutputTokens/);
    expect(bad({ providerOptions: { openai: { at: new Date(0) } } })).toThrow(
      /settings\.providerOptions\.openai.*plain JSON/,
    );
  });

  it('refuses bad settings given to send before anything is recorded', async () => {
    const store = memoryStore();
    const runtime = testRuntime(store, { model: scriptedModel([]) });
    await expect(
      runtime.send({ sessionId: 's1', text: 'Hi', settings: { seed: 1.5 } }),
    ).rejects.toThrow(/settings\.seed/);
    expect(await runtime.facts('s1')).toEqual([]);
  });
});
