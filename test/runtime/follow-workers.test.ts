import type { LanguageModelV4CallOptions } from '@ai-sdk/provider';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { scriptedModel } from '../../adapters/scripted-model.ts';
import { sequentialIds } from '../../events/ids.ts';
import { createRuntime, type Runtime } from '../../runtime.ts';
import type { PostgresStore } from '../../store/postgres/postgres-store.ts';
import { testSchema } from '../helpers/postgres.ts';
import { addTool, isFactOf, until } from './runtime-helpers.ts';

/** Asks for add(2, 3) until the prompt holds its result, then answers: any worker goes on. */
function addModel() {
  const step = (call: LanguageModelV4CallOptions) =>
    call.prompt.some((message) => message.role === 'tool')
      ? { text: 'It is 5.' }
      : { toolCalls: [{ name: 'add', input: { a: 2, b: 3 } }] };
  return scriptedModel(Array.from({ length: 10 }, () => step));
}

/** The store, with a count of its open subscriptions per session. */
function countingSubscriptions(store: PostgresStore) {
  const open = new Map<string, number>();
  const counted = new Proxy(store, {
    get(target, key) {
      if (key === 'subscribe') {
        return (sessionId: string, listener: Parameters<PostgresStore['subscribe']>[1]) => {
          open.set(sessionId, (open.get(sessionId) ?? 0) + 1);
          const unsubscribe = target.subscribe(sessionId, listener);
          let done = false;
          return () => {
            if (!done) open.set(sessionId, (open.get(sessionId) ?? 0) - 1);
            done = true;
            unsubscribe();
          };
        };
      }
      const value = Reflect.get(target, key, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { store: counted, open };
}

describe('runtime.follow with a signal, on workers sharing a postgresStore', () => {
  let database: ReturnType<typeof testSchema>;
  const runtimes: Runtime[] = [];

  beforeEach(() => {
    database = testSchema('follow_workers');
  });

  afterEach(async () => {
    await Promise.all(runtimes.splice(0).map((runtime) => runtime.close().catch(() => {})));
    await database.drop();
  });

  function worker(id: string, store: PostgresStore, tool: ReturnType<typeof addTool>['tool']) {
    const ids = sequentialIds();
    const runtime = createRuntime({
      model: addModel(),
      tools: { add: tool },
      store,
      generateId: (prefix) => `${ids(prefix)}_${id}`,
      worker: { id, leaseMs: 60_000 },
    });
    runtimes.push(runtime);
    return runtime;
  }

  it('follows a parked run no more once its last handle is let go, after 1,000 let go at once', async () => {
    const add = addTool('ask');
    const a = worker('a', database.open(), add.tool);
    const counted = countingSubscriptions(database.open());
    const b = worker('b', counted.store, add.tool);
    const turn = await a.send({ sessionId: 's', text: 'Add' });
    await until(turn, isFactOf('tool.permission.requested'));
    for (let request = 0; request < 1_000; request += 1) {
      const reason = new Error(`request ${request} left`);
      const handle = await b.follow('s', { signal: AbortSignal.abort(reason) });
      await expect(handle?.done).rejects.toBe(reason);
    }
    expect(counted.open.get('s') ?? 0).toBe(0);
    const controller = new AbortController();
    const followed = await b.follow('s', { signal: controller.signal });
    expect(followed?.runId).toBe(turn.runId);
    expect(counted.open.get('s')).toBe(1);
    controller.abort();
    await expect(followed?.done).rejects.toMatchObject({ name: 'AbortError' });
    expect(counted.open.get('s')).toBe(0);
    // The run goes on where a decision reaches it; the sender's handle gets its end.
    const [pending] = await a.pending('s');
    await a.decide({ sessionId: 's', callId: pending?.callId as string, decision: 'allow' });
    expect(await turn.done).toMatchObject({ status: 'completed', text: 'It is 5.' });
    expect(add.executions).toEqual([{ a: 2, b: 3 }]);
  });
});
