import { describe, expect, it } from 'vitest';
import { scriptedModel } from '../../adapters/scripted-model.ts';
import type { FactOf } from '../../events/facts.ts';
import { sequentialIds } from '../../events/ids.ts';
import { createRuntime, type Runtime } from '../../runtime.ts';
import { memoryStore } from '../../store/memory/memory-store.ts';
import { calibrate, scaled } from '../helpers/calibration.ts';
import { testSchema } from '../helpers/postgres.ts';
import { addTool, isFactOf, testRuntime, until } from './runtime-helpers.ts';

/** A model whose every stream stays silent: each request is cut by the "crash" that follows. */
function silentModel() {
  const model = scriptedModel([]);
  return { ...model, doStream: () => new Promise<never>(() => {}) } as typeof model;
}

describe('a run token budget (limits.maxRunInputTokens, maxRunOutputTokens)', () => {
  it('ends the run failed/budget_exhausted before the request that would go past it', async () => {
    const { tool } = addTool();
    const step = {
      toolCalls: [{ name: 'add', input: { a: 1, b: 2 } }],
      usage: { inputTokens: 400, outputTokens: 10 },
    };
    const model = scriptedModel([step, step, step, step, { text: 'never sent' }]);
    const runtime = testRuntime(memoryStore(), {
      model,
      tools: { add: tool },
      limits: { maxRunInputTokens: 1_000 },
    });
    const turn = await runtime.send({ sessionId: 's1', text: 'add, again and again' });
    expect(await turn.done).toMatchObject({ status: 'failed', reason: 'budget_exhausted' });
    // 400 + 400 < 1 000: a third request; 1 200 ≥ 1 000: no fourth.
    expect(model.requests).toHaveLength(3);
    const facts = await runtime.facts('s1');
    expect(facts.at(-2)).toMatchObject({ type: 'tool.settled', state: 'terminal' });
    expect(facts.at(-1)).toMatchObject({
      type: 'run.ended',
      status: 'failed',
      reason: 'budget_exhausted',
    });
    await runtime.close();
  });

  it('counts output tokens against maxRunOutputTokens', async () => {
    const { tool } = addTool();
    const step = {
      toolCalls: [{ name: 'add', input: { a: 1, b: 2 } }],
      usage: { inputTokens: 10, outputTokens: 300 },
    };
    const model = scriptedModel([step, step, step]);
    const runtime = testRuntime(memoryStore(), {
      model,
      tools: { add: tool },
      limits: { maxRunOutputTokens: 500 },
    });
    const turn = await runtime.send({ sessionId: 's1', text: 'add' });
    expect(await turn.done).toMatchObject({ status: 'failed', reason: 'budget_exhausted' });
    expect(model.requests).toHaveLength(2);
    await runtime.close();
  });

  it('a run that burns its budget through repeated crashes ends budget_exhausted within one step of the limit', async () => {
    const store = memoryStore();
    const generateId = sequentialIds();
    const limits = { maxRunInputTokens: 300, maxAttempts: 100 };
    const first = testRuntime(store, { generateId, model: silentModel(), limits });
    const turn = await first.send({ sessionId: 's1', text: 'Tell me about durable agents.' });
    await until(turn, isFactOf('step.started'));
    let ended: { status: string; reason: string } | undefined;
    let restarts = 0;
    while (ended === undefined && restarts < 50) {
      // The process dies mid-stream; the next one recovers the run: a new, recorded attempt.
      restarts += 1;
      const next = testRuntime(store, { generateId, model: silentModel(), limits });
      const before = (await store.read('s1')).length;
      const [report] = await next.recover();
      if (report === undefined || report.status === 'damaged') throw new Error('not resumable');
      // Until this process's attempt is durable (then it "dies") or the run ended.
      for (;;) {
        const facts = await store.read('s1');
        const last = facts.at(-1);
        if (last?.type === 'run.ended') ended = last;
        if (ended !== undefined || facts.slice(before).some(isFactOf('step.started'))) break;
        await new Promise((resolve) => setImmediate(resolve));
      }
    }
    expect(ended).toMatchObject({ status: 'failed', reason: 'budget_exhausted' });
    const attempts = (await store.read('s1')).filter(
      (fact): fact is FactOf<'step.started'> => fact.type === 'step.started',
    );
    const prompts = attempts.map((attempt) => attempt.request.promptTokens ?? 0);
    const spent = prompts.reduce((sum, tokens) => sum + tokens, 0);
    // No usage was ever reported: every cut attempt counts its prompt's size, never zero.
    expect(prompts.every((tokens) => tokens > 0)).toBe(true);
    expect(attempts).toHaveLength(restarts);
    // Within one step of the limit: the last request went out under it, and none after.
    expect(spent).toBeGreaterThanOrEqual(limits.maxRunInputTokens);
    expect(spent - (prompts.at(-1) ?? 0)).toBeLessThan(limits.maxRunInputTokens);
  });

  it('a run whose compaction is cut by repeated crashes counts each summarizing call and ends budget_exhausted', async () => {
    const store = memoryStore();
    const generateId = sequentialIds();
    // An earlier run, so the new run's first projection has older history to summarize.
    const earlier = testRuntime(store, {
      generateId,
      model: scriptedModel([{ text: 'An earlier answer. '.repeat(40) }]),
    });
    await (await earlier.send({ sessionId: 's1', text: 'An earlier question. '.repeat(40) })).done;
    // A window this small always compacts first; every summarizing call is cut by a crash.
    const limits = { maxRunInputTokens: 1_500, maxAttempts: 100, contextWindowTokens: 50 };
    const silent = () => ({
      ...silentModel(),
      doGenerate: () => new Promise<never>(() => {}),
    });
    const first = testRuntime(store, { generateId, model: silent(), limits });
    const turn = await first.send({ sessionId: 's1', text: 'Tell me about durable agents.' });
    const started = (await until(
      turn,
      isFactOf('compaction.started'),
    )) as FactOf<'compaction.started'>;
    const estimate = started.estimatedTokens ?? 0;
    expect(estimate).toBeGreaterThan(0);
    let ended: FactOf<'run.ended'> | undefined;
    let restarts = 0;
    while (ended === undefined && restarts < 30) {
      // The process dies while its summarizing call is in flight; the next one recovers the run.
      restarts += 1;
      const next = testRuntime(store, { generateId, model: silent(), limits });
      const [report] = await next.recover();
      if (report === undefined || report.status === 'damaged') throw new Error('not resumable');
      ended = (await store.read('s1')).find(
        (fact): fact is FactOf<'run.ended'> =>
          fact.type === 'run.ended' && fact.runId === turn.runId,
      );
    }
    expect(ended).toMatchObject({ status: 'failed', reason: 'budget_exhausted' });
    // Each call counted its estimated prompt: the run ended once the calls sent reached the limit.
    const calls = restarts; // the first process's call and one per recovery but the last
    expect(calls * estimate).toBeGreaterThanOrEqual(limits.maxRunInputTokens);
    expect((calls - 1) * estimate).toBeLessThan(limits.maxRunInputTokens);
  });
});

describe('a run token budget across workers', () => {
  // A takeover waits for the next worker's scan: its waits scale with the machine's load.
  const { slowdown } = calibrate();
  it(
    'counts the attempts of every worker that took the run over, and ends budget_exhausted within one step of the limit',
    async () => {
      const database = testSchema('budget_workers');
      const runtimes: Runtime[] = [];
      const limits = { maxRunInputTokens: 300, maxAttempts: 100 };
      // Every request stays silent until its worker closes (the abort ends it).
      const model = () => {
        const inner = scriptedModel([]);
        return {
          ...inner,
          doStream: (options: { abortSignal?: AbortSignal }) =>
            new Promise<never>((_, reject) =>
              options.abortSignal?.addEventListener('abort', () => reject(new Error('closed'))),
            ),
        } as typeof inner;
      };
      const open = (id: string) => {
        const runtime = createRuntime({
          model: model(),
          store: database.open(),
          worker: { id, leaseMs: scaled(3_000, slowdown) },
          limits,
        });
        runtimes.push(runtime);
        return runtime;
      };
      try {
        const reader = database.open();
        const facts = () => reader.read('s1');
        let current = open('w0');
        // A prompt of about 120 tokens: the budget of 300 allows three attempts (two takeovers).
        await current.send({ sessionId: 's1', text: 'Tell me about durable agents. '.repeat(16) });
        for (let handovers = 0; handovers < 30; handovers += 1) {
          // Until this worker's attempt is durable, or the run ended.
          const deadline = performance.now() + scaled(30_000, slowdown);
          for (;;) {
            const log = await facts();
            const attempts = log.filter((fact) => fact.type === 'step.started').length;
            if (attempts > handovers || log.some((fact) => fact.type === 'run.ended')) break;
            if (performance.now() > deadline) {
              throw new Error(
                `no attempt ${handovers + 1}: ${log.map((fact) => fact.type).join(' ')}`,
              );
            }
            await new Promise((resolve) => setTimeout(resolve, 50));
          }
          if ((await facts()).some((fact) => fact.type === 'run.ended')) break;
          // The worker goes away mid-request; the next one takes the run over and sends it again.
          const next = open(`w${handovers + 1}`);
          await current.close();
          current = next;
        }
        const log = await facts();
        expect(log.at(-1)).toMatchObject({
          type: 'run.ended',
          status: 'failed',
          reason: 'budget_exhausted',
        });
        const attempts = log.filter(
          (fact): fact is FactOf<'step.started'> => fact.type === 'step.started',
        );
        // Each attempt was sent by another worker, after a takeover (run.recovered).
        expect(new Set(attempts.map((attempt) => attempt.workerId)).size).toBe(attempts.length);
        expect(log.filter((fact) => fact.type === 'run.recovered').length).toBeGreaterThanOrEqual(
          attempts.length - 1,
        );
        const prompts = attempts.map((attempt) => attempt.request.promptTokens ?? 0);
        const spent = prompts.reduce((sum, tokens) => sum + tokens, 0);
        expect(prompts.every((tokens) => tokens > 0)).toBe(true);
        expect(spent).toBeGreaterThanOrEqual(limits.maxRunInputTokens);
        expect(spent - (prompts.at(-1) ?? 0)).toBeLessThan(limits.maxRunInputTokens);
      } finally {
        await Promise.all(runtimes.map((runtime) => runtime.close().catch(() => {})));
        await database.drop();
      }
    },
    scaled(150_000, slowdown),
  );
});
