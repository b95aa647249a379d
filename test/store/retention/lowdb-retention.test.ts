import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { lowdbStore } from '../../../store/folder/lowdb-store.ts';
import { nodeStoreFs, type StoreFs } from '../../../store/folder/store-fs.ts';
import { purgeSessions } from '../../../store/retention/purge-sessions.ts';
import { storeFacts } from '../store-facts.ts';
import type { RetainingStore } from '../store-harnesses.ts';
import { campaignEndedBefore, campaignFacts, purgedSessionIds } from './retention-sessions.ts';

describe('lowdbStore retention', () => {
  let dir: string;
  let store: RetainingStore;

  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'turnlog-lowdb-retention-'));
    store = lowdbStore({ dir, segmentSize: 3 });
  });

  afterEach(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('runs an append called during a removal after it, on the session afresh', async () => {
    await store.append('ended_3', campaignFacts('ended_3'));
    const removing = store.removeSessions([{ sessionId: 'ended_3', lastSeq: 5 }]);
    const fresh = storeFacts('ended_3').runStarted('again_1', 'run_again');
    const appending = store.append('ended_3', [fresh], { expectedSeq: 0 });
    expect(await removing).toEqual([{ sessionId: 'ended_3', outcome: 'removed' }]);
    expect((await appending).appended.map((fact) => [fact.id, fact.seq])).toEqual([['again_1', 1]]);
    await store.close();
    store = lowdbStore({ dir, segmentSize: 3 });
    expect((await store.read('ended_3')).map((fact) => fact.id)).toEqual(['again_1']);
  });

  it('leaves a session whose append was called just before the removal', async () => {
    await store.append('ended_3', campaignFacts('ended_3'));
    const fresh = storeFacts('ended_3').runStarted('again_1', 'run_again');
    const appending = store.append('ended_3', [fresh]);
    const removing = store.removeSessions([{ sessionId: 'ended_3', lastSeq: 5 }]);
    expect(await removing).toEqual([{ sessionId: 'ended_3', outcome: 'changed' }]);
    expect((await appending).lastSeq).toBe(6);
    expect((await store.read('ended_3')).length).toBe(6);
  });

  it('never purges a session whose log holds an unfinished run, whatever its record and headers say', async () => {
    // Its last fact is the run.ended of run_1 while run_2 is open: only the log says so, since
    // the header of the tail segment and the record are edited to list no open run before it.
    const facts = storeFacts('two_runs');
    await store.append('two_runs', [
      facts.runStarted('two_1', 'run_1'),
      facts.runStarted('two_2', 'run_2'),
      facts.steering('two_3', 'run_2'),
      facts.runEnded('two_4', 'run_1'),
    ]);
    await store.close();
    const folder = path.join(dir, 'sessions', 'two_runs');
    for (const name of ['000001.jsonl', 'session.json']) {
      const file = path.join(folder, name);
      const text = await readFile(file, 'utf8');
      const edited = text.replaceAll(
        '"openRuns":[{"turnId":"turn_1","runId":"run_1"},{"turnId":"turn_1","runId":"run_2"}]',
        '"openRuns":[{"turnId":"turn_1","runId":"run_1"}]',
      );
      expect(edited).not.toBe(text);
      await writeFile(file, edited);
    }
    store = lowdbStore({ dir, segmentSize: 3 });
    const endedBefore = new Date('2026-02-01T00:00:00.000Z');
    expect(await store.endedSessions({ endedBefore })).toEqual([]);
    expect((await store.findings()).map(({ sessionId, kind }) => ({ sessionId, kind }))).toEqual([
      { sessionId: 'two_runs', kind: 'unreadable' },
    ]);
    // Asked directly, removal loads the session from its facts and refuses it as well.
    expect(await store.removeSessions([{ sessionId: 'two_runs', lastSeq: 4 }])).toEqual([
      { sessionId: 'two_runs', outcome: 'unreadable' },
    ]);
    expect(await readdir(folder)).toContain('000001.jsonl');
  });

  it('deletes at open the folder of a removal a kill interrupted, which is no session', async () => {
    await store.close();
    const tombstone = path.join(dir, 'sessions', '.purge-4242-1');
    await mkdir(tombstone);
    await writeFile(path.join(tombstone, '000000.jsonl'), '{"half":');
    store = lowdbStore({ dir, segmentSize: 3 });
    expect(existsSync(tombstone)).toBe(false);
    expect(await store.sessions()).toEqual([]);
  });

  it('takes a session removed while openRuns() reads its folder for gone, not damaged', async () => {
    await store.append('ended_3', campaignFacts('ended_3'));
    await store.append('kept_open', campaignFacts('kept_open'));
    await store.close();
    let release = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let held = false;
    // openRuns' first read of ended_3's record waits until the session was removed.
    const fs: StoreFs = {
      ...nodeStoreFs,
      async readFile(file) {
        if (!held && file.endsWith(path.join('ended_3', 'session.json'))) {
          held = true;
          await gate;
        }
        return nodeStoreFs.readFile(file);
      },
    };
    store = lowdbStore({ dir, segmentSize: 3, fs });
    const reading = store.openRuns();
    await expect.poll(() => held).toBe(true);
    expect(await store.removeSessions([{ sessionId: 'ended_3', lastSeq: 5 }])).toEqual([
      { sessionId: 'ended_3', outcome: 'removed' },
    ]);
    release();
    expect(await reading).toEqual([
      { sessionId: 'kept_open', turnId: 'turn_1', runId: 'kept_open_run' },
    ]);
    expect(await store.findings()).toEqual([]);
  });

  it('reports no finding for sessions purged while openRuns() and sessions() read the folder', async () => {
    for (const sessionId of purgedSessionIds) {
      await store.append(sessionId, campaignFacts(sessionId));
    }
    await store.close();
    // Reopened: nothing in memory, so the readers go to the folders as they are being retired.
    store = lowdbStore({ dir, segmentSize: 3 });
    const readers: Promise<unknown>[] = [];
    const report = await purgeSessions(store, {
      endedBefore: campaignEndedBefore,
      batchSize: 4,
      onProgress: () => readers.push(store.openRuns(), store.sessions()),
    });
    await Promise.all(readers);
    expect(report.removed).toBe(purgedSessionIds.length);
    expect(await store.findings()).toEqual([]);
    expect(await readdir(path.join(dir, 'sessions'))).toEqual([]);
  });
});
