import { describe, expect, it } from 'vitest';
import { scriptedModel } from '../../adapters/scripted-model.ts';
import { toUIMessages } from '../../adapters/ui/ui-message-stream.ts';
import type { FactOf } from '../../events/facts.ts';
import { imageTokens } from '../../machines/pure/estimate-tokens.ts';
import { InvalidArgumentError } from '../../runtime-errors.ts';
import { memoryStore } from '../../store/memory/memory-store.ts';
import { testRuntime } from './runtime-helpers.ts';

/** A 1×1 PNG, base64. */
const pixel =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';

describe('send() with files', () => {
  it('records attached files in run.started, replays them in history, and gives them to the provider as file parts', async () => {
    const model = scriptedModel([{ text: 'A red pixel.' }, { text: 'Still a red pixel.' }]);
    const runtime = testRuntime(memoryStore(), { model });
    const files = [{ mediaType: 'image/png', data: pixel, filename: 'pixel.png' }];
    const turn = await runtime.send({ sessionId: 's', text: 'What is this?', files });
    await turn.done;
    const [started] = await runtime.facts('s');
    expect(started).toMatchObject({ type: 'run.started', input: { text: 'What is this?', files } });
    const userMessage = model.requests[0]?.prompt.find((message) => message.role === 'user');
    expect(userMessage?.content).toEqual([
      { type: 'text', text: 'What is this?' },
      {
        type: 'file',
        mediaType: 'image/png',
        data: { type: 'data', data: pixel },
        filename: 'pixel.png',
      },
    ]);

    // The next run's history replays the file, and the page shows it from the log.
    await (await runtime.send({ sessionId: 's', text: 'And now?' })).done;
    expect((await runtime.history('s'))[0]).toEqual({
      role: 'user',
      content: [
        { type: 'text', text: 'What is this?' },
        { type: 'file', mediaType: 'image/png', data: pixel, filename: 'pixel.png' },
      ],
    });
    const secondPrompt = model.requests[1]?.prompt.filter((message) => message.role === 'user');
    expect(secondPrompt?.[0]?.content).toEqual(userMessage?.content);
    const [user] = toUIMessages(await runtime.facts('s'));
    expect(user?.parts).toEqual([
      {
        type: 'file',
        mediaType: 'image/png',
        url: `data:image/png;base64,${pixel}`,
        filename: 'pixel.png',
      },
      { type: 'text', text: 'What is this?' },
    ]);
    await runtime.close();
  });

  it('counts attached images in the estimate that starts a compaction before an overflow', async () => {
    const model = scriptedModel([
      { text: 'Hello.', usage: { inputTokens: 100, outputTokens: 2 } },
      { text: 'They said hello.' }, // the compaction's summary
      { text: 'Four red pixels.', usage: { inputTokens: 7_000, outputTokens: 4 } },
    ]);
    const limits = { contextWindowTokens: 6_000, maxOutputTokens: 1_000 };
    const runtime = testRuntime(memoryStore(), { model, limits });
    await (await runtime.send({ sessionId: 's', text: 'Hi' })).done;
    const files = Array.from({ length: 4 }, () => ({ mediaType: 'image/png', data: pixel }));
    await (await runtime.send({ sessionId: 's', text: 'Look', files })).done;
    // 100 reported, a few characters, and 4 images: over the 5,000 left for the prompt.
    const started = (await runtime.facts('s')).find(
      (fact): fact is FactOf<'compaction.started'> => fact.type === 'compaction.started',
    );
    expect(started).toMatchObject({ reason: 'budget', budgetTokens: 5_000 });
    expect(started?.estimatedTokens).toBeGreaterThan(100 + 4 * imageTokens);
    expect(model.requests).toHaveLength(3);
    await runtime.close();
  });

  it('counts attached files in the prompt size a token budget counts for a step', async () => {
    const model = scriptedModel([{ text: 'Two red pixels.' }]);
    const runtime = testRuntime(memoryStore(), { model, limits: { maxRunInputTokens: 50_000 } });
    const files = Array.from({ length: 2 }, () => ({ mediaType: 'image/png', data: pixel }));
    await (await runtime.send({ sessionId: 's', text: 'Look', files })).done;
    // What the budget counts for a step whose usage the provider never reports (a cut stream).
    const step = (await runtime.facts('s')).find(
      (fact): fact is FactOf<'step.started'> => fact.type === 'step.started',
    );
    expect(step?.request.promptTokens).toBeGreaterThan(2 * imageTokens);
    expect(step?.request.promptTokens).toBeLessThan(2 * imageTokens + 100);
    await runtime.close();
  });

  it('keeps a message without files a plain string: logs and hashes as before', async () => {
    const runtime = testRuntime(memoryStore(), { model: scriptedModel([{ text: 'Hi.' }]) });
    await (await runtime.send({ sessionId: 's', text: 'Hello' })).done;
    const [started] = await runtime.facts('s');
    expect(started).toMatchObject({ input: { text: 'Hello' } });
    expect(JSON.stringify(started)).not.toContain('files');
    expect((await runtime.history('s'))[0]).toEqual({ role: 'user', content: 'Hello' });
    await runtime.close();
  });

  it('refuses files that are not base64, too many files, and one over 4 MiB, recording nothing', async () => {
    const runtime = testRuntime(memoryStore(), { model: scriptedModel([{ text: 'Hi.' }]) });
    const send = (files: unknown) =>
      runtime.send({ sessionId: 's', text: 'Look', files: files as never });
    await expect(
      send([{ mediaType: 'image/png', data: 'data:image/png;base64,AAAA' }]),
    ).rejects.toThrow(/files\.0\.data.*base64/s);
    const many = Array.from({ length: 9 }, () => ({ mediaType: 'image/png', data: pixel }));
    await expect(send(many)).rejects.toThrow(InvalidArgumentError);
    const large = 'A'.repeat(Math.ceil((4 * 1024 * 1024) / 3) * 4 + 4);
    await expect(send([{ mediaType: 'image/png', data: large }])).rejects.toThrow(/at most 4 MiB/);
    expect(await runtime.facts('s')).toEqual([]);
    await runtime.close();
  });
});
