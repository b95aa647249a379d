import { spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  truncateSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Adapter } from 'lowdb';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DurableFileAdapter } from '../../store/durable-file-adapter.ts';
import {
  type EventStore,
  StoreCorruptionError,
  StoreLockedError,
  StoreWriteError,
} from '../../store/event-store.ts';
import { type LowdbStoreOptions, lowdbStore } from '../../store/lowdb-store.ts';
import type { SegmentDocument } from '../../store/session-files.ts';
import { storeFacts } from './store-facts.ts';

let dir: string;
const opened: EventStore[] = [];
const a = storeFacts('session_a');
const b = storeFacts('session_b');

/** Records every segment read and write going through the store's lowdb adapter. */
function observedAdapters(
  options: { failWrite?: (file: string) => 'before' | 'after' | undefined } = {},
) {
  const writes: string[] = [];
  const reads: string[] = [];
  const createAdapter = (file: string): Adapter<SegmentDocument> => {
    const inner = new DurableFileAdapter<SegmentDocument>(file);
    return {
      read: () => {
        reads.push(relative(file));
        return inner.read();
      },
      write: async (data) => {
        writes.push(relative(file));
        const failure = options.failWrite?.(file);
        if (failure === 'before') throw new Error('disk full');
        await inner.write(data);
        if (failure === 'after') throw new Error('fsync of the folder failed');
      },
    };
  };
  return { writes, reads, createAdapter };
}

function relative(file: string): string {
  return path.relative(dir, file).replace(/\.new-\d+-\d+/, '.new');
}

function open(options: Omit<LowdbStoreOptions, 'dir'> = {}): EventStore {
  const store = lowdbStore({ dir, ...options });
  opened.push(store);
  return store;
}

function segment(session: string, index: number): string {
  return path.join(dir, 'sessions', session, `${String(index).padStart(6, '0')}.json`);
}

async function appendSteps(store: EventStore, sessionId: string, count: number) {
  const facts = storeFacts(sessionId);
  for (let index = 1; index <= count; index += 1) {
    await store.append(sessionId, [
      index === 1
        ? facts.runStarted(`${sessionId}_${index}`, 'run_1')
        : facts.steering(`${sessionId}_${index}`, 'run_1'),
    ]);
  }
}

beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'turnlog-lowdb-'));
});

afterEach(async () => {
  for (const store of opened.splice(0)) await store.close();
  await rm(dir, { recursive: true, force: true });
});

describe('lowdbStore segments', () => {
  it('splits a session into segment files and rewrites only the tail on append', async () => {
    const observed = observedAdapters();
    const store = open({ segmentSize: 4, createAdapter: observed.createAdapter });
    await appendSteps(store, 'session_a', 10);
    expect(readdirSync(path.join(dir, 'sessions', 'session_a'))).toEqual([
      '000000.json',
      '000001.json',
      '000002.json',
    ]);
    const first = JSON.parse(readFileSync(segment('session_a', 0), 'utf8')) as SegmentDocument;
    expect(first.facts.map((fact) => fact.seq)).toEqual([1, 2, 3, 4]);
    expect(first.openRuns).toEqual([{ turnId: 'turn_1', runId: 'run_1' }]);
    observed.writes.length = 0;
    await store.append('session_a', [a.steering('x11', 'run_1')]);
    await store.append('session_a', [a.steering('x12', 'run_1')]);
    await store.append('session_a', [a.steering('x13', 'run_1')]);
    expect(observed.writes).toEqual([
      'sessions/session_a/000002.json',
      'sessions/session_a/000002.json',
      'sessions/session_a/000003.json',
    ]);
  });

  it('writes an append spanning several segments tail first, in order', async () => {
    const observed = observedAdapters();
    const store = open({ segmentSize: 2, createAdapter: observed.createAdapter });
    await store.append('session_a', [a.runStarted('f1', 'run_1')]);
    await store.append(
      'session_a',
      ['f2', 'f3', 'f4', 'f5'].map((id) => a.steering(id, 'run_1')),
    );
    expect(observed.writes).toEqual([
      'sessions/.new/000000.json',
      'sessions/session_a/000000.json',
      'sessions/session_a/000001.json',
      'sessions/session_a/000002.json',
    ]);
  });

  it('commits the appends of one tick with one write per touched segment', async () => {
    const observed = observedAdapters();
    const store = open({ segmentSize: 4, createAdapter: observed.createAdapter });
    await store.append('session_a', [a.runStarted('f1', 'run_1'), a.steering('f2', 'run_1')]);
    await store.read('session_b');
    observed.writes.length = 0;
    const results = await Promise.all([
      store.append('session_a', [a.steering('f3', 'run_1')]),
      store.append('session_b', [b.runStarted('g1', 'run_b')]),
      store.append('session_a', [a.steering('f4', 'run_1')]),
      store.append('session_b', [b.steering('g2', 'run_b')]),
      store.append('session_a', [a.steering('f5', 'run_1')]),
    ]);
    expect(results.map((result) => result.lastSeq)).toEqual([3, 1, 4, 2, 5]);
    expect(observed.writes.sort()).toEqual([
      'sessions/.new/000000.json',
      'sessions/session_a/000000.json',
      'sessions/session_a/000001.json',
    ]);
  });

  it('applies appends to a session that is still loading in call order', async () => {
    const first = open();
    await appendSteps(first, 'session_a', 3);
    await first.close();
    const store = open();
    const results = await Promise.all(
      ['f4', 'f5', 'f6'].map((id) => store.append('session_a', [a.steering(id, 'run_1')])),
    );
    expect(results.map((result) => result.appended[0]?.seq)).toEqual([4, 5, 6]);
  });

  it('delivers a fact to subscribers only once it is on disk', async () => {
    const store = open();
    const onDisk: boolean[] = [];
    store.subscribe('session_a', (fact) => {
      onDisk.push(readFileSync(segment('session_a', 0), 'utf8').includes(`"${fact.id}"`));
    });
    await store.append('session_a', [a.runStarted('f1', 'run_1')]);
    await store.append('session_a', [a.steering('f2', 'run_1')]);
    expect(onDisk).toEqual([true, true]);
  });

  it('answers openRuns after a reopen from the tail segment of each session only', async () => {
    const first = open({ segmentSize: 2 });
    await appendSteps(first, 'session_a', 5);
    await first.append('session_b', [b.runStarted('g1', 'run_b'), b.runEnded('g2', 'run_b')]);
    await first.close();
    const observed = observedAdapters();
    const store = open({ segmentSize: 2, createAdapter: observed.createAdapter });
    expect(await store.openRuns()).toEqual([
      { sessionId: 'session_a', turnId: 'turn_1', runId: 'run_1' },
    ]);
    expect(observed.reads.sort()).toEqual([
      'sessions/session_a/000002.json',
      'sessions/session_b/000000.json',
    ]);
  });

  it('keeps a session id too long for a file name under a hashed folder', async () => {
    const long = `user/${'ж'.repeat(150)}`;
    const first = open();
    await first.append(long, [storeFacts(long).runStarted('l1', 'run_l')]);
    await first.close();
    const [folder] = readdirSync(path.join(dir, 'sessions'));
    expect(folder).toMatch(/^~h[0-9a-f]{64}$/);
    const store = open();
    expect(await store.sessions()).toEqual([long]);
    expect(await store.openRuns()).toEqual([{ sessionId: long, turnId: 'turn_1', runId: 'run_l' }]);
    expect((await store.read(long)).map((fact) => fact.id)).toEqual(['l1']);
  });
});

describe('lowdbStore corruption', () => {
  beforeEach(async () => {
    const store = open({ segmentSize: 4 });
    await appendSteps(store, 'session_a', 10);
    await appendSteps(store, 'session_b', 3);
    await store.close();
  });

  async function expectCorrupt(file: string, message: RegExp) {
    const store = open({ segmentSize: 4 });
    const error = await store.read('session_a').catch((caught: unknown) => caught);
    expect(StoreCorruptionError.isInstance(error)).toBe(true);
    expect((error as StoreCorruptionError).file).toBe(file);
    expect((error as Error).message).toContain(file);
    expect((error as Error).message).toMatch(message);
    // Asking again gives the same error, never an empty or shortened session.
    await expect(store.read('session_a')).rejects.toMatchObject({
      name: 'StoreCorruptionError',
      file,
    });
    expect((await store.read('session_b')).map((fact) => fact.seq)).toEqual([1, 2, 3]);
    await store.append('session_b', [b.steering('g4', 'run_1')]);
    expect((await store.read('session_b')).length).toBe(4);
  }

  it('names a truncated segment and keeps the other sessions readable', async () => {
    const file = segment('session_a', 1);
    truncateSync(file, Math.floor(readFileSync(file).length / 2));
    await expectCorrupt(file, /is not valid JSON \(.+\); restore it from a backup or move it away/);
  });

  it('names an empty segment', async () => {
    const file = segment('session_a', 2);
    writeFileSync(file, '');
    await expectCorrupt(file, /is not valid JSON \(it is empty\)/);
  });

  it('names a hand-edited segment with a seq gap inside it', async () => {
    const file = segment('session_a', 1);
    const document = JSON.parse(readFileSync(file, 'utf8')) as SegmentDocument;
    document.facts.splice(1, 1);
    writeFileSync(file, JSON.stringify(document));
    await expectCorrupt(
      file,
      /seq 7 .* is where seq 6 belongs: the log has a gap or is out of order/,
    );
  });

  it('names a segment that does not continue the one before', async () => {
    const file = segment('session_a', 2);
    const document = JSON.parse(readFileSync(file, 'utf8')) as SegmentDocument;
    for (const fact of document.facts) fact.seq += 1;
    writeFileSync(file, JSON.stringify(document));
    await expectCorrupt(file, /seq 10 .* is where seq 9 belongs/);
  });

  it('names a missing segment between others', async () => {
    const file = segment('session_a', 1);
    unlinkSync(file);
    await expectCorrupt(file, /is missing but later segments .* exist; restore it from a backup/);
  });

  it('names a segment whose facts belong to another session', async () => {
    const file = segment('session_a', 0);
    writeFileSync(file, readFileSync(segment('session_b', 0)));
    await expectCorrupt(file, /belongs to session session_b, not session_a/);
  });

  it('fails openRuns with the error naming a corrupt tail rather than hiding its runs', async () => {
    const file = segment('session_a', 2);
    writeFileSync(file, '{"format":');
    const store = open();
    await expect(store.openRuns()).rejects.toMatchObject({ name: 'StoreCorruptionError', file });
  });
});

describe('lowdbStore crash leftovers', () => {
  it('ignores and removes temp files and staging folders a killed process left', async () => {
    const first = open();
    await appendSteps(first, 'session_a', 2);
    await first.close();
    const temp = path.join(dir, 'sessions', 'session_a', '.000000.json.tmp-4242-7');
    const staging = path.join(dir, 'sessions', '.new-4242-1');
    const partialTemp = path.join(dir, 'partials', '.session_a.json.tmp-4242-2');
    writeFileSync(temp, '{"torn');
    mkdirSync(staging);
    writeFileSync(path.join(staging, '000000.json'), '{"torn');
    writeFileSync(partialTemp, '{"torn');
    const store = open();
    expect(await store.sessions()).toEqual(['session_a']);
    expect((await store.read('session_a')).map((fact) => fact.seq)).toEqual([1, 2]);
    expect([existsSync(temp), existsSync(staging), existsSync(partialTemp)]).toEqual([
      false,
      false,
      false,
    ]);
  });

  it('reads a partial slot file that does not parse as no partial', async () => {
    const store = open();
    const partial = {
      runId: 'r',
      stepId: 's',
      attempt: 1,
      text: 'Hi',
      reasoning: '',
      truncated: false,
    };
    await store.savePartial('session_a', partial);
    expect(readdirSync(path.join(dir, 'partials'))).toEqual(['session_a.json']);
    writeFileSync(path.join(dir, 'partials', 'session_a.json'), '{"runId');
    expect(await store.loadPartial('session_a')).toBeUndefined();
    await store.savePartial('session_a', partial);
    await store.close();
    expect(await open().loadPartial('session_a')).toEqual(partial);
  });
});

describe('lowdbStore write failures', () => {
  it('rejects appends of a failed write with StoreWriteError and keeps going', async () => {
    let fail = true;
    const observed = observedAdapters({ failWrite: () => (fail ? 'before' : undefined) });
    const store = open({ createAdapter: observed.createAdapter });
    const error = await store
      .append('session_a', [a.runStarted('f1', 'run_1')])
      .catch((caught: unknown) => caught);
    expect(StoreWriteError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ sessionId: 'session_a' });
    expect((error as Error).message).toMatch(/disk full.*retry with the same fact ids/);
    expect(await store.read('session_a')).toEqual([]);
    fail = false;
    const retry = await store.append('session_a', [a.runStarted('f1', 'run_1')], {
      expectedSeq: 0,
    });
    expect(retry.appended.map((fact) => fact.seq)).toEqual([1]);
  });

  it('reloads from disk after an ambiguous failure, so a retry of a stored fact is a no-op', async () => {
    let failure: 'after' | undefined;
    const observed = observedAdapters({ failWrite: () => failure });
    const store = open({ createAdapter: observed.createAdapter });
    await store.append('session_a', [a.runStarted('f1', 'run_1')]);
    failure = 'after';
    const pending = [
      store.append('session_a', [a.steering('f2', 'run_1')]),
      store.append('session_a', [a.steering('f3', 'run_1')]),
    ];
    const outcomes = await Promise.allSettled(pending);
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['rejected', 'rejected']);
    failure = undefined;
    const retry = await store.append('session_a', [
      a.steering('f2', 'run_1'),
      a.steering('f3', 'run_1'),
    ]);
    expect(retry).toEqual({ appended: [], lastSeq: 3 });
    expect((await store.read('session_a')).map((fact) => fact.id)).toEqual(['f1', 'f2', 'f3']);
  });
});

describe('lowdbStore lock', () => {
  it('keeps a second store off an open dir, naming the holder pid, until the first closes', async () => {
    const store = open();
    const error = (() => {
      try {
        lowdbStore({ dir });
      } catch (caught) {
        return caught;
      }
    })();
    expect(StoreLockedError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ pid: process.pid, dir });
    expect((error as Error).message).toMatch(/is in use by another store in this process/);
    await store.close();
    expect(existsSync(path.join(dir, 'turnlog.lock'))).toBe(false);
    await open().append('session_a', [a.runStarted('f1', 'run_1')]);
  });

  it('takes over the lock of a process that no longer exists', async () => {
    const exited = spawnSync(process.execPath, ['-e', '']);
    expect(exited.status).toBe(0);
    writeFileSync(path.join(dir, 'turnlog.lock'), `${exited.pid}\n`);
    const store = open();
    expect(readFileSync(path.join(dir, 'turnlog.lock'), 'utf8')).toBe(`${process.pid}\n`);
    await store.append('session_a', [a.runStarted('f1', 'run_1')]);
    expect(readdirSync(dir).sort()).toEqual(['partials', 'sessions', 'turnlog.lock']);
  });

  it('refuses a lock file without a pid, saying how to clear it', () => {
    writeFileSync(path.join(dir, 'turnlog.lock'), '');
    expect(() => lowdbStore({ dir })).toThrow(/holds no pid .* delete .*turnlog\.lock/);
  });
});
