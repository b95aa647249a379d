import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { StoreError, StoreInputError } from '../../../store/event-store.ts';
import { type LowdbStoreOptions, lowdbStore } from '../../../store/folder/lowdb-store.ts';
import { nodeStoreFs } from '../../../store/folder/store-fs.ts';
import { storeFacts } from '../store-facts.ts';
import { lowdbFixture } from './lowdb-fixture.ts';

const fixture = lowdbFixture();

function thrown(make: () => unknown): unknown {
  try {
    make();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw');
}

describe('lowdbStore options', () => {
  it.each([
    [{ segmentSize: 0 }, /segmentSize must be a whole number >= 1, got 0/],
    [{ segmentSize: 2.5 }, /segmentSize must be a whole number >= 1, got 2.5/],
    [{ maxCachedSessions: -1 }, /maxCachedSessions must be a whole number >= 0, got -1/],
    [{ segmentsize: 4 }, /unknown option segmentsize; the options are dir, segmentSize, /],
    [
      { createAdapter: () => ({}) },
      /unknown option createAdapter \(segments are no longer lowdb documents since 0\.2: pass fs/,
    ],
  ])('refuses %o with StoreInputError', (options, message) => {
    const error = thrown(() =>
      lowdbStore({ dir: fixture.dir, ...options } as unknown as LowdbStoreOptions),
    );
    expect(StoreInputError.isInstance(error)).toBe(true);
    expect((error as Error).message).toMatch(message);
  });

  it('refuses a missing dir', () => {
    expect(() => lowdbStore({} as LowdbStoreOptions)).toThrow(
      /options\.dir must be the store's folder \(a non-empty string\), got undefined/,
    );
  });
});

describe('lowdbStore on a folder it cannot use', () => {
  it('names a dir under a regular file with StoreError, not a bare ENOTDIR', () => {
    const file = path.join(fixture.dir, 'a-file');
    writeFileSync(file, 'not a folder');
    const dir = path.join(file, 'store');
    const error = thrown(() => lowdbStore({ dir }));
    expect(StoreError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ path: dir, code: 'ENOTDIR' });
    expect((error as Error).message).toMatch(
      new RegExp(
        `^lowdbStore: cannot use ${dir} \\(ENOTDIR.*\\); the store needs a folder this process may create, read and write`,
      ),
    );
  });

  it('names a session folder it may not read with StoreError and reports it, the others unaffected', async () => {
    const first = lowdbStore({ dir: fixture.dir });
    await first.append('s1', [storeFacts('s1').runStarted('f1', 'run_1')]);
    await first.append('s2', [storeFacts('s2').runStarted('g1', 'run_2')]);
    await first.close();
    const denied = path.join(fixture.dir, 'sessions', 's1');
    // Root ignores file modes, so the refusal comes from the file-system facade.
    const store = fixture.open({
      fs: {
        ...nodeStoreFs,
        readdir: async (folder) => {
          if (folder !== denied) return nodeStoreFs.readdir(folder);
          throw Object.assign(new Error(`EACCES: permission denied, scandir '${folder}'`), {
            code: 'EACCES',
            path: folder,
          });
        },
      },
    });
    const error = await store.read('s1').catch((caught: unknown) => caught);
    expect(StoreError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ path: denied, code: 'EACCES' });
    expect((error as Error).message).toMatch(
      /^lowdbStore: cannot read .*sessions\/s1 \(EACCES: permission denied.*\); check that this process may read and write/,
    );
    expect(await store.openRuns()).toEqual([{ sessionId: 's2', turnId: 'turn_1', runId: 'run_2' }]);
    expect(await store.findings()).toEqual([
      {
        kind: 'unreadable',
        sessionId: 's1',
        file: denied,
        line: undefined,
        message: (error as Error).message,
      },
    ]);
  });
});
