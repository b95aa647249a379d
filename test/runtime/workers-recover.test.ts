import type { LanguageModelV4CallOptions } from '@ai-sdk/provider';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { scriptedModel } from '../../adapters/scripted-model.ts';
import { sequentialIds } from '../../events/ids.ts';
import { createRuntime, type Runtime } from '../../runtime.ts';
import type { PostgresStore } from '../../store/postgres/postgres-store.ts';
import { defineTool } from '../../tools/define-tool.ts';
import { testSchema } from '../helpers/postgres.ts';
import { storeFacts } from '../store/store-facts.ts';
import { deferred, isFactOf, until } from './runtime-helpers.ts';

/** Until the prompt holds a tool result the model calls `ask` (or `slow`, when told); then it answers. */
function model() {
  const step = (call: LanguageModelV4CallOptions) => {
    if (call.prompt.some((message) => message.role === 'tool')) return { text: 'All done.' };
    const text = JSON.stringify(call.prompt);
    const name = text.includes('slowly') ? 'slow' : 'ask';
    return { text: 'Working.', toolCalls: [{ id: 'call_1', name, input: { job: 'j1' } }] };
  };
  return scriptedModel(Array.from({ length: 40 }, () => step));
}

/** The store with each session's reads counted. */
function counted(store: PostgresStore) {
  const reads = new Map<string, number>();
  const wrapped = new Proxy(store, {
    get(target, key) {
      const value = Reflect.get(target, key, target);
      if (typeof value !== 'function') return value;
      if (key !== 'read') return value.bind(target);
      return (sessionId: string, options?: { fromSeq?: number }) => {
        reads.set(sessionId, (reads.get(sessionId) ?? 0) + 1);
        return target.read(sessionId, options);
      };
    },
  });
  return { store: wrapped, reads };
}

// Issue 26, item 5: a worker that starts and calls recover(), as README's "Operating turnlog"
// says to, costs nothing per parked run: their leases were released by the worker that parked
// them, and a decision rebuilds one when it comes.
describe("a worker's recover() with parked runs", () => {
  let database: ReturnType<typeof testSchema>;
  const runtimes: Runtime[] = [];
  const slowGate = deferred();

  beforeEach(() => {
    database = testSchema('wrecover');
  });

  afterEach(async () => {
    slowGate.resolve();
    await Promise.all(runtimes.splice(0).map((runtime) => runtime.close().catch(() => {})));
    await database.drop();
  });

  function worker(id: string, store: PostgresStore = database.open()) {
    const ids = sequentialIds();
    const runtime = createRuntime({
      model: model(),
      tools: {
        ask: defineTool({
          description: 'Asks first.',
          inputSchema: z.object({ job: z.string() }),
          permission: 'ask',
          execute: ({ job }) => `${job} done`,
        }),
        slow: defineTool({
          description: 'Takes its time.',
          inputSchema: z.object({ job: z.string() }),
          execute: async ({ job }) => {
            await slowGate.promise;
            return `${job} done`;
          },
        }),
      },
      store,
      generateId: (prefix) => `${ids(prefix)}_${id}`,
      worker: { id, leaseMs: 60_000 },
    });
    runtimes.push(runtime);
    return runtime;
  }

  it('reads no parked run, resumes the run a closed worker handed over and the run never leased', async () => {
    const a = worker('a');
    const parked = ['parked-1', 'parked-2', 'parked-3', 'parked-4'];
    for (const sessionId of parked) {
      const turn = await a.send({ sessionId, text: 'do it' });
      await until(turn, isFactOf('tool.permission.requested'));
    }
    const slow = await a.send({ sessionId: 'interrupted', text: 'do it slowly' });
    await until(slow, isFactOf('tool.started'));
    // Its parkings were queued on the sessions' locks: close() waits for them (leases released),
    // and hands the run still working over (its lease expires now).
    await a.close();
    const writer = database.open();
    await writer.append('never-leased', [storeFacts('never-leased').runStarted('f1', 'run_n')]);

    const { store, reads } = counted(database.open());
    const b = worker('b', store);
    const recovered = await b.recover();
    expect(
      recovered.map((run) => [run.sessionId, run.status === 'damaged' ? run.damage : run.status]),
    ).toEqual([
      ['interrupted', 'parked'],
      ['never-leased', 'resumed'],
    ]);
    for (const sessionId of parked) expect(reads.get(sessionId)).toBeUndefined();
    for (const sessionId of parked) {
      const facts = await writer.read(sessionId);
      expect(facts.map((fact) => fact.type)).not.toContain('run.recovered');
    }

    // A parked run costs nothing until a decision comes: then it goes on, without a recovery.
    const turn = await b.follow('parked-2');
    const [pending] = await b.pending('parked-2');
    await b.decide({ sessionId: 'parked-2', callId: pending?.callId ?? '', decision: 'allow' });
    expect(await turn?.done).toMatchObject({ status: 'completed', text: 'All done.' });
    const types = (await writer.read('parked-2')).map((fact) => fact.type);
    expect(types).not.toContain('run.recovered');
    expect(types.at(-1)).toBe('run.ended');
  });
});
