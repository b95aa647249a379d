import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { NewFact } from '../../../events/facts.ts';
import { StoreInputError } from '../../../store/event-store.ts';
import { memoryStore } from '../../../store/memory/memory-store.ts';
import { archiveFileName } from '../../../store/retention/archive-files.ts';
import { type PurgeProgress, purgeSessions } from '../../../store/retention/purge-sessions.ts';
import {
  encodeSessionArchive,
  exportSession,
  importSession,
  sessionArchiveFormat,
} from '../../../store/retention/session-archive.ts';
import { ArchiveFormatError, SessionExistsError } from '../../../store/session-retention.ts';
import { storeFacts } from '../store-facts.ts';
import { type Harness, type RetainingStore, storeHarnesses } from '../store-harnesses.ts';

const endedBefore = new Date('2026-02-01T00:00:00.000Z');

/** A session of one run, ended at `endedAt` (or still open without it). */
function oneRun(sessionId: string, endedAt: string | undefined): NewFact[] {
  const facts = storeFacts(sessionId);
  const started = facts.runStarted(`${sessionId}_1`, `${sessionId}_run`);
  const steering = facts.steering(`${sessionId}_2`, `${sessionId}_run`);
  if (endedAt === undefined) return [started, steering];
  return [
    started,
    steering,
    { ...facts.runEnded(`${sessionId}_3`, `${sessionId}_run`), at: endedAt },
  ];
}

/**
 * Four sessions: `old_a` and `old_b` ended in January (they go), `recent` ended in February, and
 * `open` has an ended January run and a second run still open (both stay).
 */
async function seed(store: RetainingStore): Promise<void> {
  await store.append('old_a', oneRun('old_a', '2026-01-05T10:00:00.000Z'));
  await store.append('old_b', oneRun('old_b', '2026-01-20T10:00:00.000Z'));
  await store.append('recent', oneRun('recent', '2026-02-03T10:00:00.000Z'));
  await store.append('open', oneRun('open', '2026-01-02T10:00:00.000Z'));
  await store.append('open', [storeFacts('open').runStarted('open_4', 'open_run_2')]);
}

describe.each(storeHarnesses)('$name (retention: purge, archive, import)', ({ name, create }) => {
  let harness: Harness;
  let store: RetainingStore;
  let archiveDir: string;

  beforeEach(async () => {
    harness = await create();
    store = harness.open();
    archiveDir = await mkdtemp(path.join(tmpdir(), 'turnlog-archive-'));
  });

  afterEach(async () => {
    await store.close();
    await harness.cleanup();
    await rm(archiveDir, { recursive: true, force: true });
  });

  it('finds the sessions whose last run ended before the time and that have no open run', async () => {
    await seed(store);
    expect(await store.endedSessions({ endedBefore })).toEqual([
      { sessionId: 'old_a', lastSeq: 3, endedAt: '2026-01-05T10:00:00.000Z' },
      { sessionId: 'old_b', lastSeq: 3, endedAt: '2026-01-20T10:00:00.000Z' },
    ]);
    store = await harness.reopen(store);
    expect((await store.endedSessions({ endedBefore })).map((s) => s.sessionId)).toEqual([
      'old_a',
      'old_b',
    ]);
  });

  it('removes a session only while it is at the seq it was found at and has no open run', async () => {
    await seed(store);
    await store.append('old_b', [storeFacts('old_b').runStarted('old_b_4', 'old_b_run_2')]);
    const outcomes = await store.removeSessions([
      { sessionId: 'old_a', lastSeq: 3 },
      { sessionId: 'old_b', lastSeq: 3 },
      { sessionId: 'open', lastSeq: 4 },
      { sessionId: 'never', lastSeq: 3 },
    ]);
    expect(outcomes).toEqual([
      { sessionId: 'old_a', outcome: 'removed' },
      { sessionId: 'old_b', outcome: 'changed' },
      { sessionId: 'open', outcome: 'changed' },
      { sessionId: 'never', outcome: 'absent' },
    ]);
    expect(await store.read('old_a')).toEqual([]);
    expect((await store.read('old_b')).length).toBe(4);
    expect(await store.sessions()).toEqual(['old_b', 'open', 'recent']);
    expect(await store.removeSessions([{ sessionId: 'old_a', lastSeq: 3 }])).toEqual([
      { sessionId: 'old_a', outcome: 'absent' },
    ]);
  });

  it('purges the ended sessions once, reporting each, and a second purge finds nothing', async () => {
    await seed(store);
    const progress: PurgeProgress[] = [];
    const report = await purgeSessions(store, {
      endedBefore,
      batchSize: 1,
      onProgress: (step) => progress.push(step),
    });
    expect(report).toEqual({ found: 2, removed: 2, archived: [], left: [], stopped: false });
    expect(progress).toEqual([
      { done: 1, total: 2, sessionId: 'old_a', outcome: 'removed', archive: undefined },
      { done: 2, total: 2, sessionId: 'old_b', outcome: 'removed', archive: undefined },
    ]);
    expect(await store.sessions()).toEqual(['open', 'recent']);
    expect(await store.openRuns()).toEqual([
      { sessionId: 'open', turnId: 'turn_1', runId: 'open_run_2' },
    ]);
    expect(await purgeSessions(store, { endedBefore })).toEqual({
      found: 0,
      removed: 0,
      archived: [],
      left: [],
      stopped: false,
    });
    store = await harness.reopen(store);
    expect(await store.sessions()).toEqual(['open', 'recent']);
    expect(await store.read('old_a')).toEqual([]);
  });

  it('stops between batches when its signal is aborted, leaving the rest whole', async () => {
    await seed(store);
    const controller = new AbortController();
    const report = await purgeSessions(store, {
      endedBefore,
      batchSize: 1,
      signal: controller.signal,
      onProgress: () => controller.abort(),
    });
    expect(report).toEqual({ found: 2, removed: 1, archived: [], left: [], stopped: true });
    expect(await store.sessions()).toEqual(['old_b', 'open', 'recent']);
  });

  it('starts a purged session afresh at seq 1 when its id is used again', async () => {
    await seed(store);
    await purgeSessions(store, { endedBefore });
    const again = oneRun('old_a', undefined);
    const { appended } = await store.append('old_a', again, { expectedSeq: 0 });
    expect(appended.map((fact) => fact.seq)).toEqual([1, 2]);
    store = await harness.reopen(store);
    expect((await store.read('old_a')).map((fact) => fact.id)).toEqual(['old_a_1', 'old_a_2']);
  });

  it('keeps a subscription across a purge: it gets the facts of the session started again under its id from seq 1', async () => {
    const seen: string[] = [];
    store.subscribe('old_a', (fact) => seen.push(`${fact.id}@${fact.seq}`));
    await seed(store);
    expect(seen).toEqual(['old_a_1@1', 'old_a_2@2', 'old_a_3@3']);
    expect(await purgeSessions(store, { endedBefore })).toMatchObject({ removed: 2 });
    const facts = storeFacts('old_a');
    await store.append('old_a', [
      facts.runStarted('again_1', 'run_again'),
      facts.steering('again_2', 'run_again'),
    ]);
    await store.append('old_a', [
      facts.steering('again_3', 'run_again'),
      facts.steering('again_4', 'run_again'),
    ]);
    const expected = ['old_a_1@1', 'old_a_2@2', 'old_a_3@3'];
    expected.push('again_1@1', 'again_2@2', 'again_3@3', 'again_4@4');
    // Every store delivers its own appends before the append resolves.
    expect(seen).toEqual(expected);
  });

  it('delivers each fact once to a subscription when an append of the id races its removal', async () => {
    const seen: string[] = [];
    store.subscribe('old_a', (fact) => seen.push(`${fact.id}@${fact.seq}`));
    await seed(store);
    const facts = storeFacts('old_a');
    const removing = store.removeSessions([{ sessionId: 'old_a', lastSeq: 3 }]);
    const appending = store.append('old_a', [facts.runStarted('race_1', 'run_race')]);
    const [[removed], { appended }] = await Promise.all([removing, appending]);
    const seq = appended[0]?.seq;
    // Either the removal went first (the append starts the id afresh) or the append did.
    expect([removed?.outcome, seq]).toEqual(
      removed?.outcome === 'removed' ? ['removed', 1] : ['changed', 4],
    );
    await store.append('old_a', [facts.steering('race_2', 'run_race')]);
    const old = ['old_a_1@1', 'old_a_2@2', 'old_a_3@3'];
    expect(seen).toEqual([...old, `race_1@${seq}`, `race_2@${(seq ?? 0) + 1}`]);
  });

  it('archives each session to one JSON Lines file before removing it, readable into any store', async () => {
    await seed(store);
    const exported = await exportSession(store, 'old_a');
    const oldB = await store.read('old_b');
    const report = await purgeSessions(store, { endedBefore, archiveDir });
    expect(report.archived).toEqual([
      path.join(archiveDir, 'old_a.jsonl'),
      path.join(archiveDir, 'old_b.jsonl'),
    ]);
    expect((await readdir(archiveDir)).sort()).toEqual(['old_a.jsonl', 'old_b.jsonl']);
    const text = await readFile(path.join(archiveDir, 'old_a.jsonl'), 'utf8');
    expect(text).toBe(exported);
    const lines = text.split('\n');
    expect(lines.length).toBe(5);
    expect(JSON.parse(lines[0] ?? '')).toEqual({
      format: sessionArchiveFormat,
      sessionId: 'old_a',
      facts: 3,
    });

    expect(await importSession(store, text)).toEqual({ sessionId: 'old_a', outcome: 'imported' });
    const elsewhere = memoryStore();
    const archivedB = await readFile(path.join(archiveDir, 'old_b.jsonl'), 'utf8');
    await importSession(elsewhere, archivedB);
    expect(await elsewhere.read('old_b')).toEqual(oldB);
    store = await harness.reopen(store);
    expect(await exportSession(store, 'old_a')).toBe(exported);
    expect(await store.endedSessions({ endedBefore })).toEqual([
      { sessionId: 'old_a', lastSeq: 3, endedAt: '2026-01-05T10:00:00.000Z' },
    ]);
  });

  it('imports a session written by another store with its seq, times and lease tokens', async () => {
    const source = memoryStore();
    const facts = oneRun('leased', '2026-01-05T10:00:00.000Z').map((fact) => ({
      ...fact,
      workerId: 'worker_1',
      leaseEpoch: 2,
    })) as NewFact[];
    await source.append('leased', facts);
    const archive = await exportSession(source, 'leased');
    expect(await importSession(store, archive)).toEqual({
      sessionId: 'leased',
      outcome: 'imported',
    });
    expect(await store.read('leased')).toEqual(await source.read('leased'));
    expect(await store.openRuns()).toEqual([]);
    const { appended } = await store.append('leased', [
      storeFacts('leased').runStarted('leased_4', 'run_2'),
    ]);
    expect(appended.map((fact) => fact.seq)).toEqual([4]);
  });

  it('gives subscribers the facts of an imported session', async () => {
    const seen: string[] = [];
    store.subscribe('copy', (fact) => seen.push(`${fact.id}@${fact.seq}`));
    const source = memoryStore();
    await source.append('copy', oneRun('copy', '2026-01-05T10:00:00.000Z'));
    await importSession(store, await exportSession(source, 'copy'));
    await expect.poll(() => seen).toEqual(['copy_1@1', 'copy_2@2', 'copy_3@3']);
  });

  it('is a no-op to import a session the store holds with the same facts, and refuses other facts', async () => {
    await seed(store);
    const archive = await exportSession(store, 'old_a');
    expect(await importSession(store, archive)).toEqual({
      sessionId: 'old_a',
      outcome: 'identical',
    });
    const other = memoryStore();
    await other.append('old_a', oneRun('old_a', '2026-01-06T10:00:00.000Z'));
    const error = await importSession(store, await exportSession(other, 'old_a')).catch((e) => e);
    expect(SessionExistsError.isInstance(error)).toBe(true);
    expect(error.sessionId).toBe('old_a');
    expect(await exportSession(store, 'old_a')).toBe(archive);
  });

  it('refuses an archive that was cut, edited or has an unknown format, naming the line', async () => {
    const source = memoryStore();
    await source.append('s', oneRun('s', '2026-01-05T10:00:00.000Z'));
    const archive = await exportSession(source, 's');
    const lines = archive.trimEnd().split('\n');
    const cut = `${lines.slice(0, 3).join('\n')}\n`;
    const gap = `${[lines[0], lines[1], lines[3], lines[2]].join('\n')}\n`;
    const newer = archive.replace(sessionArchiveFormat, 'turnlog.session-archive/9');
    const notJson = archive.replace(lines[2] ?? '', '{"id":');
    const cases = await Promise.all(
      [cut, gap, newer, notJson].map((text) =>
        importSession(store, text, { file: 's.jsonl' }).catch((error) => error),
      ),
    );
    expect(cases.map((error) => ArchiveFormatError.isInstance(error))).toEqual([
      true,
      true,
      true,
      true,
    ]);
    expect(cases.map((error) => error.line)).toEqual([undefined, 3, 1, 3]);
    expect(cases.every((error) => error.file === 's.jsonl')).toBe(true);
    expect(await store.sessions()).toEqual([]);
  });

  it('leaves a session that gained a run after it was archived, and deletes that archive', async () => {
    await seed(store);
    // A new run starts in old_a between its archive being written and its removal.
    const racing = {
      endedSessions: (options: { endedBefore: Date }) => store.endedSessions(options),
      read: (sessionId: string) => store.read(sessionId),
      removeSessions: async (sessions: { sessionId: string; lastSeq: number }[]) => {
        await store.append('old_a', [storeFacts('old_a').runStarted('old_a_4', 'old_a_run_2')]);
        return store.removeSessions(sessions);
      },
    } as unknown as RetainingStore;
    await writeFile(path.join(archiveDir, 'keep.txt'), 'not an archive');
    const report = await purgeSessions(racing, { endedBefore, archiveDir });
    expect(report).toEqual({
      found: 2,
      removed: 1,
      archived: [path.join(archiveDir, 'old_b.jsonl')],
      left: [{ sessionId: 'old_a', outcome: 'changed' }],
      stopped: false,
    });
    expect((await readdir(archiveDir)).sort()).toEqual(['keep.txt', 'old_b.jsonl']);
    expect((await store.read('old_a')).length).toBe(4);
    expect(await store.openRuns()).toEqual([
      { sessionId: 'old_a', turnId: 'turn_1', runId: 'old_a_run_2' },
      { sessionId: 'open', turnId: 'turn_1', runId: 'open_run_2' },
    ]);
  });

  it('refuses a log with a gap or a bad cut-off at the store, writing nothing', async () => {
    const source = memoryStore();
    await source.append('s', oneRun('s', '2026-01-05T10:00:00.000Z'));
    const facts = await source.read('s');
    const gap = [facts[0], facts[2]].filter((fact) => fact !== undefined);
    const error = await store.importFacts('s', gap).catch((caught) => caught);
    expect(StoreInputError.isInstance(error)).toBe(true);
    expect(error.factIndex).toBe(1);
    expect(await store.sessions()).toEqual([]);
    const badTime = await store
      .endedSessions({ endedBefore: new Date('not a time') })
      .catch((caught) => caught);
    expect(StoreInputError.isInstance(badTime)).toBe(true);
  });

  it(`names archive files safely for any session id (${name})`, async () => {
    const id = 'Tenant/42 é';
    await store.append(id, oneRun(id, '2026-01-05T10:00:00.000Z'));
    const report = await purgeSessions(store, { endedBefore, archiveDir });
    expect(report.archived).toEqual([path.join(archiveDir, archiveFileName(id))]);
    expect(archiveFileName(id)).toBe('~54enant~2F42~20~C3~A9.jsonl');
    const text = await readFile(report.archived[0] ?? '', 'utf8');
    expect(text).toBe(encodeSessionArchive(id, (await importAndRead(text)).facts));
  });
});

async function importAndRead(text: string) {
  const store = memoryStore();
  const { sessionId } = await importSession(store, text);
  return { sessionId, facts: await store.read(sessionId) };
}
