import { describe, expect, it } from 'vitest';
import type { Fact } from '../../../events/facts.ts';
import type { StoreFs } from '../../../store/folder/store-fs.ts';
import { storeFacts } from '../store-facts.ts';
import { lowdbFixture } from './lowdb-fixture.ts';

const fixture = lowdbFixture();
const { open, appendSteps, observedFs } = fixture;

/** Reads of a session's files since `from`. */
const readsOf = (reads: string[], sessionId: string, from = 0) =>
  reads.slice(from).filter((file) => file.startsWith(`sessions/${sessionId}/`));

describe('lowdbStore eviction', () => {
  it('keeps at most maxCachedSessions idle sessions in memory and reloads an evicted one from disk', async () => {
    const observed = observedFs();
    const store = open({ maxCachedSessions: 2, fs: observed.fs });
    for (const sessionId of ['s1', 's2', 's3']) await appendSteps(store, sessionId, 2);
    // s1 was evicted when s3 came in; s2 and s3 answer from memory.
    let mark = observed.reads.length;
    expect((await store.read('s3')).map((fact) => fact.id)).toEqual(['s3_1', 's3_2']);
    expect((await store.read('s2')).map((fact) => fact.id)).toEqual(['s2_1', 's2_2']);
    expect(observed.reads.slice(mark)).toEqual([]);
    expect((await store.read('s1')).map((fact) => fact.id)).toEqual(['s1_1', 's1_2']);
    expect(readsOf(observed.reads, 's1', mark)).toEqual([
      'sessions/s1/session.json',
      'sessions/s1/000000.jsonl',
    ]);
    // Loading s1 evicted the least recently used one: s3 (s2 was read after it).
    mark = observed.reads.length;
    await store.read('s2');
    expect(observed.reads.slice(mark)).toEqual([]);
    await store.read('s3');
    expect(readsOf(observed.reads, 's3', mark)).toHaveLength(2);
  });

  it('goes on appending to an evicted session at the right seq, with expectedSeq', async () => {
    const store = open({ maxCachedSessions: 0 });
    const facts = storeFacts('s1');
    await store.append('s1', [facts.runStarted('f1', 'run_1')], { expectedSeq: 0 });
    await store.append('s2', [storeFacts('s2').runStarted('g1', 'run_1')]);
    const result = await store.append('s1', [facts.steering('f2', 'run_1')], { expectedSeq: 1 });
    expect(result.appended.map((fact) => fact.seq)).toEqual([2]);
    await expect(
      store.append('s1', [facts.steering('f3', 'run_1')], { expectedSeq: 1 }),
    ).rejects.toMatchObject({ name: 'ConcurrencyError', actualSeq: 2 });
    // A repeated id is still known after a reload.
    expect(await store.append('s1', [facts.steering('f2', 'run_1')])).toEqual({
      appended: [],
      lastSeq: 2,
    });
  });

  it('delivers every fact to a subscriber once, in order, across evictions', async () => {
    const store = open({ maxCachedSessions: 1 });
    const seen: string[] = [];
    store.subscribe('s1', (fact) => seen.push(`${fact.id}@${fact.seq}`));
    const facts = storeFacts('s1');
    await store.append('s1', [facts.runStarted('f1', 'run_1')]);
    await appendSteps(store, 's2', 1);
    await store.append('s1', [facts.steering('f2', 'run_1'), facts.steering('f3', 'run_1')]);
    await appendSteps(store, 's3', 1);
    await store.append('s1', [facts.steering('f4', 'run_1')]);
    expect(seen).toEqual(['f1@1', 'f2@2', 'f3@3', 'f4@4']);
  });

  it('never evicts a session whose append is not durable yet, and a slow session holds up no other', async () => {
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const observed = observedFs();
    // Writes to s0's folder wait for the gate: its append stays in flight while others come and go.
    const fs: StoreFs = {
      ...observed.fs,
      open: async (file, flags) => {
        const handle = await observed.fs.open(file, flags);
        if (!file.includes('/sessions/s0/') || flags !== 'a') return handle;
        return { ...handle, write: async (data) => gate.then(() => handle.write(data)) };
      },
    };
    const store = open({ maxCachedSessions: 1, fs });
    await appendSteps(store, 's0', 1);
    const held = store.append('s0', [storeFacts('s0').steering('held', 'run_1')]);
    const others = Array.from({ length: 20 }, (_, index) =>
      store.append(`s${index + 1}`, [storeFacts(`s${index + 1}`).runStarted(`x${index}`, 'run_1')]),
    );
    expect((await Promise.all(others)).map((result) => result.lastSeq)).toEqual(
      Array.from({ length: 20 }, () => 1),
    );
    const mark = observed.reads.length;
    release();
    expect(await held).toMatchObject({ lastSeq: 2 });
    // s0 stayed loaded while its write was in flight: the append resolved without a reload.
    expect(readsOf(observed.reads, 's0', mark)).toEqual([]);
    const reads = await Promise.all(
      Array.from({ length: 21 }, (_, index) => store.read(`s${index}`)),
    );
    expect(reads.map((facts: Fact[]) => facts.length)).toEqual([
      2,
      ...Array.from({ length: 20 }, () => 1),
    ]);
  });
});
