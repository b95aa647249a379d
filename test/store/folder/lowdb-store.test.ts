import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Fact } from '../../../events/facts.ts';
import { StoreLockedError, StoreWriteError } from '../../../store/event-store.ts';
import { lowdbStore } from '../../../store/folder/lowdb-store.ts';
import { storeFacts } from '../store-facts.ts';
import { lowdbFixture } from './lowdb-fixture.ts';

const fixture = lowdbFixture();
const { open, segment, lines, appendSteps, observedFs } = fixture;
const a = storeFacts('session_a');
const b = storeFacts('session_b');

const jsonLines = (values: readonly unknown[]) =>
  values.map((value) => `${JSON.stringify(value)}\n`).join('');
const bytesOf = (values: readonly unknown[]) => Buffer.byteLength(jsonLines(values));
const segmentHeader = (
  segment: number,
  firstSeq: number,
  openRuns: { turnId: string; runId: string }[],
) => ({ format: 'turnlog.segment/2', sessionId: 'session_a', segment, firstSeq, openRuns });

describe('lowdbStore segments', () => {
  /** The ops of a commit that appends to an existing tail: one write of its lines, one fdatasync. */
  const appendOps = (file: string, facts: Fact[]) => [
    `write ${file} ${bytesOf(facts)}`,
    `datasync ${file}`,
  ];

  it('appends one line per fact to the tail segment, fdatasyncs it, and syncs no folder', async () => {
    const observed = observedFs();
    const store = open({ segmentSize: 4, fs: observed.fs });
    await appendSteps(store, 'session_a', 9);
    expect(readdirSync(path.join(fixture.dir, 'sessions', 'session_a')).sort()).toEqual([
      '000000.jsonl',
      '000001.jsonl',
      '000002.jsonl',
      'session.json',
    ]);
    const [header, ...facts] = lines(segment('session_a', 1));
    expect(header).toEqual({
      format: 'turnlog.segment/2',
      sessionId: 'session_a',
      segment: 1,
      firstSeq: 5,
      openRuns: [{ turnId: 'turn_1', runId: 'run_1' }],
    });
    expect(facts.map((fact) => fact.seq)).toEqual([5, 6, 7, 8]);
    observed.ops.length = 0;
    await store.append('session_a', [a.steering('x11', 'run_1')]);
    await store.append('session_a', [a.steering('x12', 'run_1'), a.steering('x13', 'run_1')]);
    const written = await store.read('session_a', { fromSeq: 10 });
    const tail = 'sessions/session_a/000002.jsonl';
    expect(observed.ops).toEqual([
      ...appendOps(tail, written.slice(0, 1)),
      ...appendOps(tail, written.slice(1, 3)),
    ]);
    expect(readFileSync(segment('session_a', 2), 'utf8').endsWith(`${jsonLines(written)}`)).toBe(
      true,
    );
  });

  it('creates a segment with its header when the tail is full, then rewrites the record', async () => {
    const observed = observedFs();
    const store = open({ segmentSize: 2, fs: observed.fs });
    await store.append('session_a', [a.runStarted('f1', 'run_1')]);
    expect(observed.ops).toEqual([
      'mkdir sessions/.new',
      `write sessions/.new/000000.jsonl ${bytesOf([segmentHeader(0, 1, [])]) + bytesOf(await store.read('session_a'))}`,
      'sync sessions/.new/000000.jsonl',
      expect.stringMatching(/^write sessions\/\.new\/session\.json\.tmp \d+$/),
      'sync sessions/.new/session.json.tmp',
      'rename sessions/.new/session.json.tmp sessions/.new/session.json',
      'sync sessions/.new',
      'rename sessions/.new sessions/session_a',
      'sync sessions',
    ]);
    observed.ops.length = 0;
    await store.append(
      'session_a',
      ['f2', 'f3', 'f4', 'f5'].map((id) => a.steering(id, 'run_1')),
    );
    const facts = await store.read('session_a');
    const folder = 'sessions/session_a';
    const open1 = [{ turnId: 'turn_1', runId: 'run_1' }];
    const created = (index: number, from: number, through: number) => [
      `write ${folder}/00000${index}.jsonl ${bytesOf([segmentHeader(index, from, open1)]) + bytesOf(facts.slice(from - 1, through))}`,
      `sync ${folder}/00000${index}.jsonl`,
      `sync ${folder}`,
      expect.stringMatching(/^write sessions\/session_a\/session\.json\.tmp \d+$/),
      `sync ${folder}/session.json.tmp`,
      `rename ${folder}/session.json.tmp ${folder}/session.json`,
      `sync ${folder}`,
    ];
    // In order, tail first: a crash between two writes leaves a prefix, never a gap.
    expect(observed.ops).toEqual([
      ...appendOps(`${folder}/000000.jsonl`, facts.slice(1, 2)),
      ...created(1, 3, 4),
      ...created(2, 5, 5),
    ]);
    expect(JSON.parse(readFileSync(fixture.record('session_a'), 'utf8'))).toEqual({
      format: 'turnlog.session/1',
      sessionId: 'session_a',
      segments: [
        {
          file: '000000.jsonl',
          firstSeq: 1,
          firstId: 'f1',
          lastSeq: 2,
          lastId: 'f2',
          openRuns: [],
        },
        {
          file: '000001.jsonl',
          firstSeq: 3,
          firstId: 'f3',
          lastSeq: 4,
          lastId: 'f4',
          openRuns: open1,
        },
        { file: '000002.jsonl', firstSeq: 5, firstId: 'f5', openRuns: open1 },
      ],
    });
  });

  it('commits the appends of one tick with one write per touched session', async () => {
    const observed = observedFs();
    const store = open({ segmentSize: 4, fs: observed.fs });
    await store.append('session_a', [a.runStarted('f1', 'run_1'), a.steering('f2', 'run_1')]);
    await store.append('session_b', [b.runStarted('g1', 'run_b')]);
    observed.ops.length = 0;
    const results = await Promise.all([
      store.append('session_a', [a.steering('f3', 'run_1')]),
      store.append('session_b', [b.steering('g2', 'run_b')]),
      store.append('session_a', [a.steering('f4', 'run_1')]),
      store.append('session_b', [b.steering('g3', 'run_b')]),
      store.append('session_a', [a.steering('f5', 'run_1')]),
    ]);
    expect(results.map((result) => result.lastSeq)).toEqual([3, 2, 4, 3, 5]);
    const factsA = await store.read('session_a');
    const factsB = await store.read('session_b');
    expect(observed.ops.filter((op) => op.startsWith('write')).sort()).toEqual([
      `write sessions/session_a/000000.jsonl ${bytesOf(factsA.slice(2, 4))}`,
      `write sessions/session_a/000001.jsonl ${bytesOf([segmentHeader(1, 5, [{ turnId: 'turn_1', runId: 'run_1' }])]) + bytesOf(factsA.slice(4))}`,
      expect.stringMatching(/^write sessions\/session_a\/session\.json\.tmp \d+$/),
      `write sessions/session_b/000000.jsonl ${bytesOf(factsB.slice(1))}`,
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

  it('answers openRuns after a reopen from the files, checking each tail header against the segments before it', async () => {
    const first = open({ segmentSize: 2 });
    await appendSteps(first, 'session_a', 5);
    await first.append('session_b', [b.runStarted('g1', 'run_b'), b.runEnded('g2', 'run_b')]);
    await first.append('session_c', [storeFacts('session_c').runStarted('h1', 'run_c')]);
    await first.append('session_c', [storeFacts('session_c').runEnded('h2', 'run_c')]);
    await first.append('session_c', [storeFacts('session_c').runStarted('h3', 'run_d')]);
    await first.close();
    const observed = observedFs();
    const store = open({ segmentSize: 2, fs: observed.fs });
    expect(await store.openRuns()).toEqual([
      { sessionId: 'session_a', turnId: 'turn_1', runId: 'run_1' },
      { sessionId: 'session_c', turnId: 'turn_1', runId: 'run_d' },
    ]);
    // The tail's header summary is an index: the segments before it are scanned for run facts.
    expect(observed.reads.sort()).toEqual([
      'sessions/session_a/000000.jsonl',
      'sessions/session_a/000001.jsonl',
      'sessions/session_a/000002.jsonl',
      'sessions/session_a/session.json',
      'sessions/session_b/000000.jsonl',
      'sessions/session_b/session.json',
      'sessions/session_c/000000.jsonl',
      'sessions/session_c/000001.jsonl',
      'sessions/session_c/session.json',
    ]);
  });

  it('keeps a session id too long for a file name under a hashed folder', async () => {
    const long = `user/${'ж'.repeat(150)}`;
    const first = open();
    await first.append(long, [storeFacts(long).runStarted('l1', 'run_l')]);
    await first.close();
    const [folder] = readdirSync(path.join(fixture.dir, 'sessions'));
    expect(folder).toMatch(/^~h[0-9a-f]{64}$/);
    const store = open();
    expect(await store.sessions()).toEqual([long]);
    expect(await store.openRuns()).toEqual([{ sessionId: long, turnId: 'turn_1', runId: 'run_l' }]);
    expect((await store.read(long)).map((fact) => fact.id)).toEqual(['l1']);
  });
});

describe('lowdbStore crash leftovers', () => {
  it('ignores and removes temp files and staging folders a killed process left', async () => {
    const first = open();
    await appendSteps(first, 'session_a', 2);
    await first.close();
    const temp = path.join(fixture.dir, 'sessions', 'session_a', '.session.json.tmp-4242-7');
    const staging = path.join(fixture.dir, 'sessions', '.new-4242-1');
    const partialTemp = path.join(fixture.dir, 'partials', '.session_a.json.tmp-4242-2');
    writeFileSync(temp, '{"torn');
    mkdirSync(staging);
    writeFileSync(path.join(staging, '000000.jsonl'), '{"torn');
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
    expect(readdirSync(path.join(fixture.dir, 'partials'))).toEqual(['session_a.json']);
    writeFileSync(path.join(fixture.dir, 'partials', 'session_a.json'), '{"runId');
    expect(await store.loadPartial('session_a')).toBeUndefined();
    await store.savePartial('session_a', partial);
    await store.close();
    expect(await open().loadPartial('session_a')).toEqual(partial);
  });
});

describe('lowdbStore write failures', () => {
  it('rejects appends of a failed write with StoreWriteError and keeps going', async () => {
    let fail = true;
    const observed = observedFs({ failWrite: () => (fail ? 'before' : undefined) });
    const store = open({ fs: observed.fs });
    const error = await store
      .append('session_a', [a.runStarted('f1', 'run_1')])
      .catch((caught: unknown) => caught);
    expect(StoreWriteError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ sessionId: 'session_a' });
    expect((error as Error).message).toMatch(
      /disk full.*not stored: retry them \(with the same fact ids/,
    );
    expect(await store.read('session_a')).toEqual([]);
    fail = false;
    const retry = await store.append('session_a', [a.runStarted('f1', 'run_1')], {
      expectedSeq: 0,
    });
    expect(retry.appended.map((fact) => fact.seq)).toEqual([1]);
  });

  it('undoes a write whose sync failed, so the retry writes and syncs the facts again', async () => {
    let failure: 'after' | undefined;
    const observed = observedFs({ failWrite: () => failure });
    const store = open({ fs: observed.fs });
    await store.append('session_a', [a.runStarted('f1', 'run_1')]);
    const tail = path.join('sessions', 'session_a', '000000.jsonl');
    const synced = statSync(path.join(fixture.dir, tail)).size;
    failure = 'after';
    const pending = [
      store.append('session_a', [a.steering('f2', 'run_1')]),
      store.append('session_a', [a.steering('f3', 'run_1')]),
    ];
    const outcomes = await Promise.allSettled(pending);
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['rejected', 'rejected']);
    // The bytes were written, but nothing of a failed write counts: cut back to the synced length.
    expect(observed.ops.slice(-2)).toEqual([`truncate ${tail} ${synced}`, `sync ${tail}`]);
    failure = undefined;
    const retry = await store.append('session_a', [
      a.steering('f2', 'run_1'),
      a.steering('f3', 'run_1'),
    ]);
    expect(retry.appended.map((fact) => `${fact.id}@${fact.seq}`)).toEqual(['f2@2', 'f3@3']);
    expect(observed.ops.slice(-2)).toEqual([
      expect.stringMatching(`^write ${tail} `),
      `datasync ${tail}`,
    ]);
    expect((await store.read('session_a')).map((fact) => fact.id)).toEqual(['f1', 'f2', 'f3']);
  });

  it('delivers the facts of a failed write once, when the retry stores them', async () => {
    let failure: 'after' | undefined;
    const observed = observedFs({ failWrite: () => failure });
    const store = open({ fs: observed.fs });
    const seen: string[] = [];
    store.subscribe('session_a', (fact) => seen.push(`${fact.id}@${fact.seq}`));
    await store.append('session_a', [a.runStarted('f1', 'run_1')]);
    failure = 'after';
    await expect(store.append('session_a', [a.steering('f2', 'run_1')])).rejects.toSatisfy(
      StoreWriteError.isInstance,
    );
    expect(seen).toEqual(['f1@1']);
    failure = undefined;
    expect(await store.append('session_a', [a.steering('f2', 'run_1')])).toMatchObject({
      appended: [{ id: 'f2', seq: 2 }],
      lastSeq: 2,
    });
    await store.append('session_a', [a.steering('f3', 'run_1')]);
    expect(seen).toEqual(['f1@1', 'f2@2', 'f3@3']);
  });
});

describe('lowdbStore lock', () => {
  it('keeps a second store off an open fixture.dir, naming the holder pid, until the first closes', async () => {
    const store = open();
    const error = (() => {
      try {
        lowdbStore({ dir: fixture.dir });
      } catch (caught) {
        return caught;
      }
    })();
    expect(StoreLockedError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ pid: process.pid, dir: fixture.dir });
    expect((error as Error).message).toMatch(/is in use by another store in this process/);
    await store.close();
    expect(existsSync(path.join(fixture.dir, 'turnlog.lock'))).toBe(false);
    await open().append('session_a', [a.runStarted('f1', 'run_1')]);
  });

  it('takes over the lock of a process that no longer exists', async () => {
    const exited = spawnSync(process.execPath, ['-e', '']);
    expect(exited.status).toBe(0);
    writeFileSync(path.join(fixture.dir, 'turnlog.lock'), `${exited.pid}\n`);
    const store = open();
    expect(readFileSync(path.join(fixture.dir, 'turnlog.lock'), 'utf8')).toMatch(
      new RegExp(`^${process.pid}\n(\\d+\n)?$`),
    );
    await store.append('session_a', [a.runStarted('f1', 'run_1')]);
    expect(readdirSync(fixture.dir).sort()).toEqual(['partials', 'sessions', 'turnlog.lock']);
  });

  it.runIf(existsSync('/proc/self/stat'))(
    'takes over the lock of a dead process whose pid this one got (a restarted container)',
    async () => {
      // A container's process often gets the same pid on every start (pid 1): the killed one's
      // lock names this pid, with the start time of the killed process.
      const lock = path.join(fixture.dir, 'turnlog.lock');
      writeFileSync(lock, `${process.pid}\n1\n`);
      const store = open();
      const [pid, started] = readFileSync(lock, 'utf8').split('\n');
      expect(pid).toBe(String(process.pid));
      expect(started).toMatch(/^\d+$/);
      expect(started).not.toBe('1');
      await store.append('session_a', [a.runStarted('f1', 'run_1')]);
      // The lock this process wrote keeps a second store of this process out.
      expect(() => lowdbStore({ dir: fixture.dir })).toThrow(
        /is in use by another store in this process/,
      );
      await store.close();
      expect(existsSync(lock)).toBe(false);
    },
  );

  it('refuses a lock file without a pid, saying how to clear it', () => {
    writeFileSync(path.join(fixture.dir, 'turnlog.lock'), '');
    expect(() => lowdbStore({ dir: fixture.dir })).toThrow(
      /holds no pid .* delete .*turnlog\.lock/,
    );
  });
});
