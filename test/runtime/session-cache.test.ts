import { describe, expect, it, vi } from 'vitest';
import { scriptedModel } from '../../adapters/scripted-model.ts';
import type { Fact } from '../../events/facts.ts';
import { sequentialIds } from '../../events/ids.ts';
import { projectHistory } from '../../events/project-history.ts';
import { SessionCache } from '../../machines/effects/session-cache.ts';
import { createRuntime } from '../../runtime.ts';
import type { EventStore } from '../../store/event-store.ts';
import { memoryStore } from '../../store/memory/memory-store.ts';
import { addTool } from './runtime-helpers.ts';

// A runtime keeps the log and the history projection of a session whose run ended, so the
// session's next run reads only the facts since and goes on from the previous projection.
// Nothing of that may show: every request, and the log, must be what a runtime that reads and
// projects the session anew for each run gives.

/** Two tool steps and a text answer per turn, for `turns` turns. */
const script = (turns: number) =>
  Array.from({ length: turns }, (_, turn) => [
    { toolCalls: [{ name: 'add', input: { a: turn, b: 1 } }] },
    { toolCalls: [{ name: 'add', input: { a: turn, b: 2 } }] },
    { text: `answer ${turn}` },
  ]).flat();

function runtimeOn(
  store: EventStore,
  model: ReturnType<typeof scriptedModel>,
  shared: { ids: ReturnType<typeof sequentialIds>; clock: number },
) {
  return createRuntime({
    model,
    store,
    tools: { add: addTool().tool },
    generateId: shared.ids,
    // A clock that stands still: timers read it a varying number of times.
    now: () => shared.clock,
    random: () => 0.5,
  });
}

/** `store` for a second runtime: closing that runtime leaves the store open. */
function borrowed(store: EventStore): EventStore {
  return new Proxy(store, {
    get: (target, key) =>
      key === 'close'
        ? async () => {}
        : typeof target[key as keyof EventStore] === 'function'
          ? (target[key as keyof EventStore] as (...args: unknown[]) => unknown).bind(target)
          : target[key as keyof EventStore],
  });
}

async function turn(runtime: ReturnType<typeof createRuntime>, sessionId: string, text: string) {
  const handle = await runtime.send({ sessionId, text });
  for await (const _event of handle.events);
  return handle.done;
}

describe("the runtime's cache of ended sessions", () => {
  it('sends and records what a runtime that reads every run anew does', async () => {
    const turns = 4;
    // One runtime for every turn (cached), and a new runtime per turn (nothing cached), with
    // the same ids and clock.
    const warmModel = scriptedModel(script(turns));
    const warmStore = memoryStore();
    const warm = runtimeOn(warmStore, warmModel, { ids: sequentialIds(), clock: 0 });
    const coldModel = scriptedModel(script(turns));
    const coldStore = memoryStore();
    const coldShared = { ids: sequentialIds(), clock: 0 };
    const read = vi.spyOn(warmStore, 'read');
    for (let index = 0; index < turns; index += 1) {
      expect(await turn(warm, 's', `question ${index}`)).toMatchObject({ status: 'completed' });
      const cold = runtimeOn(borrowed(coldStore), coldModel, coldShared);
      expect(await turn(cold, 's', `question ${index}`)).toMatchObject({ status: 'completed' });
      await cold.close();
    }
    // After the first run, each send read only from the last cached fact on.
    const reads = read.mock.calls.filter(([sessionId]) => sessionId === 's');
    expect(reads.map(([, options]) => options?.fromSeq)).toStrictEqual([undefined, 14, 28, 42]);
    // A tool's duration is measured, not read from the clock.
    const untimed = (facts: Fact[]) => facts.map((fact) => ({ ...fact, durationMs: undefined }));
    expect(untimed(await warmStore.read('s'))).toStrictEqual(untimed(await coldStore.read('s')));
    expect(warmModel.requests).toStrictEqual(coldModel.requests);
    await warm.close();
  });

  it('takes in what another runtime appended to the session since', async () => {
    const store = memoryStore();
    const model = scriptedModel(script(3));
    const shared = { ids: sequentialIds(), clock: 0 };
    const first = runtimeOn(store, model, shared);
    await turn(first, 's', 'question 0');
    const other = runtimeOn(borrowed(store), model, shared);
    await turn(other, 's', 'from elsewhere');
    await other.close();
    await turn(first, 's', 'question 2');
    const facts = await store.read('s');
    const lastRequest = model.requests.at(-1);
    const seen = JSON.stringify(lastRequest?.prompt);
    expect(seen).toContain('from elsewhere');
    expect(await first.history('s')).toStrictEqual(projectHistory(facts, { provider: 'scripted' }));
    await first.close();
  });

  it('reads the session in full when the store no longer goes on from the cached log', async () => {
    let target = memoryStore();
    // A store that is swapped under the runtime for another log of the same session.
    const store = new Proxy({} as EventStore, {
      get: (_, key) => {
        const value = target[key as keyof EventStore];
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const model = scriptedModel(script(2));
    const shared = { ids: sequentialIds(), clock: 0 };
    const runtime = runtimeOn(store, model, shared);
    await turn(runtime, 's', 'question 0');
    const elsewhere = memoryStore();
    const other = sequentialIds();
    const writer = runtimeOn(borrowed(elsewhere), scriptedModel(script(1)), {
      ids: (prefix) => `elsewhere_${other(prefix)}`,
      clock: 0,
    });
    await turn(writer, 's', 'another log');
    await writer.close();
    target = memoryStore({ facts: (await elsewhere.read('s')) as Fact[] });
    await turn(runtime, 's', 'question 1');
    const seen = JSON.stringify(model.requests.at(-1)?.prompt);
    expect(seen).toContain('another log');
    expect(seen).not.toContain('question 0');
    await runtime.close();
  });

  it('keeps at most its capacity of sessions, dropping the least recently used', async () => {
    const cache = new SessionCache(2);
    const store = memoryStore();
    const history = () => cache.history('none');
    const fact = (sessionId: string) =>
      ({ id: `f_${sessionId}`, seq: 1, sessionId, runId: 'r', turnId: 't' }) as unknown as Fact;
    cache.keep('a', [fact('a')], history());
    cache.keep('b', [fact('b')], history());
    cache.keep('c', [fact('c')], history());
    expect(cache.size).toBe(2);
    // 'a' was dropped; a read of 'b' (nothing in this store: read in full) forgets it too.
    expect(await cache.facts(store, 'a')).toBeUndefined();
    expect(await cache.facts(store, 'b')).toBeUndefined();
    expect(cache.size).toBe(1);
  });
});
