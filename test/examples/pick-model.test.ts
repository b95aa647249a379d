import { afterEach, beforeEach, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { pickModel } from '../../examples/pick-model.ts';
import { createRuntime } from '../../index.ts';
import { memoryStore } from '../../store/memory/memory-store.ts';
import { defineTool } from '../../tools/define-tool.ts';

let printed: string[];

beforeEach(() => {
  vi.stubEnv('OPENAI_API_KEY', '');
  vi.stubEnv('GOOGLE_GENERATIVE_AI_API_KEY', '');
  printed = [];
  vi.spyOn(console, 'log').mockImplementation((line: string) => {
    printed.push(line);
  });
});
afterEach(() => {
  vi.unstubAllEnvs();
  vi.restoreAllMocks();
});

// Building a provider model sends nothing; no test here makes a request to a provider.
it('picks OpenAI gpt-4.1-mini when OPENAI_API_KEY is set, and says so', async () => {
  vi.stubEnv('OPENAI_API_KEY', 'sk-test');
  vi.stubEnv('GOOGLE_GENERATIVE_AI_API_KEY', 'also-set');
  const model = await pickModel([]);
  expect(typeof model === 'object' && [model.provider, model.modelId]).toEqual([
    'openai.responses',
    'gpt-4.1-mini',
  ]);
  expect(printed).toEqual(['model: openai gpt-4.1-mini']);
});

it('picks Google gemini-2.5-flash when only GOOGLE_GENERATIVE_AI_API_KEY is set', async () => {
  vi.stubEnv('GOOGLE_GENERATIVE_AI_API_KEY', 'g-test');
  const model = await pickModel([]);
  expect(typeof model === 'object' && model.modelId).toBe('gemini-2.5-flash');
  expect(printed).toEqual(['model: google gemini-2.5-flash']);
});

it('plays a reply function offline for every request, with call ids that never repeat in a session', async () => {
  const model = await pickModel((call) =>
    call.prompt.at(-1)?.role === 'tool'
      ? { text: 'done' }
      : { toolCalls: [{ name: 'noop' }, { name: 'noop' }] },
  );
  expect(printed).toEqual([
    'model: scripted (offline; set OPENAI_API_KEY or GOOGLE_GENERATIVE_AI_API_KEY for a real model)',
  ]);
  const noop = defineTool({
    description: 'Does nothing.',
    inputSchema: z.object({}),
    execute: () => 'ok',
  });
  const runtime = createRuntime({ model, tools: { noop }, store: memoryStore() });
  for (const text of ['first', 'second']) {
    const turn = await runtime.send({ sessionId: 's1', text });
    expect(await turn.done).toMatchObject({ status: 'completed', text: 'done', steps: 2 });
  }
  const callIds = (await runtime.facts('s1')).flatMap((fact) =>
    fact.type === 'tool.started' ? [fact.callId] : [],
  );
  expect(callIds).toEqual(['call_1', 'call_1_2', 'call_5', 'call_5_2']);
  await runtime.close();
});
