import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import type { EventStore } from '../../../store/event-store.ts';
import { type LowdbStoreOptions, lowdbStore } from '../../../store/folder/lowdb-store.ts';
import { nodeStoreFs, type StoreFs } from '../../../store/folder/store-fs.ts';
import { storeFacts } from '../store-facts.ts';

/**
 * A fresh temp folder per test for lowdbStore tests, with helpers to open stores on it (closed
 * after the test), find and parse segment files, fill sessions and observe the store's file
 * system.
 */
export function lowdbFixture() {
  let dir = '';
  const opened: EventStore[] = [];

  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'turnlog-lowdb-'));
  });

  afterEach(async () => {
    for (const store of opened.splice(0)) await store.close();
    await rm(dir, { recursive: true, force: true });
  });

  /** A path relative to the store, with process-specific staging and temp names made stable. */
  const relative = (file: string) =>
    path
      .relative(dir, file)
      .replace(/\.new-\d+-\d+/, '.new')
      .replace(/\.([^/]+)\.tmp-\d+-\d+$/, '$1.tmp');

  return {
    get dir() {
      return dir;
    },
    /** Opens a store on the test's folder; the fixture closes it after the test. */
    open(options: Omit<LowdbStoreOptions, 'dir'> = {}): EventStore {
      const store = lowdbStore({ dir, ...options });
      opened.push(store);
      return store;
    },
    /** The path of a session's segment file (`.jsonl`; `.json` for a 0.1.0 one). */
    segment(session: string, index: number, extension = 'jsonl'): string {
      return path.join(dir, 'sessions', session, `${String(index).padStart(6, '0')}.${extension}`);
    },
    /** The path of a session's record. */
    record(session: string): string {
      return path.join(dir, 'sessions', session, 'session.json');
    },
    /** The parsed lines of a segment file: the header, then the facts. */
    lines(file: string): Record<string, unknown>[] {
      const text = readFileSync(file, 'utf8');
      return text
        .split('\n')
        .slice(0, -1)
        .map((line) => JSON.parse(line) as Record<string, unknown>);
    },
    /** Appends `count` facts one append at a time: a run.started, then steering facts. */
    async appendSteps(store: EventStore, sessionId: string, count: number): Promise<void> {
      const facts = storeFacts(sessionId);
      for (let index = 1; index <= count; index += 1) {
        const id = `${sessionId}_${index}`;
        await store.append(sessionId, [
          index === 1 ? facts.runStarted(id, 'run_1') : facts.steering(id, 'run_1'),
        ]);
      }
    },
    /**
     * A file system that records what the store does through it (`ops`: `write <file> <bytes>`,
     * `datasync <file>`, `sync <file or folder>`, `rename <from> <to>`, `mkdir`, `truncate`,
     * `unlink`; `reads`: files read) and can fail writes: `before` (nothing written) or `after`
     * (written, then the error).
     */
    observedFs(options: { failWrite?: (file: string) => 'before' | 'after' | undefined } = {}) {
      const ops: string[] = [];
      const reads: string[] = [];
      const fs: StoreFs = {
        ...nodeStoreFs,
        readFile: (file) => {
          reads.push(relative(file));
          return nodeStoreFs.readFile(file);
        },
        mkdir: (folder) => {
          ops.push(`mkdir ${relative(folder)}`);
          return nodeStoreFs.mkdir(folder);
        },
        rename: (from, to) => {
          ops.push(`rename ${relative(from)} ${relative(to)}`);
          return nodeStoreFs.rename(from, to);
        },
        unlink: (file) => {
          ops.push(`unlink ${relative(file)}`);
          return nodeStoreFs.unlink(file);
        },
        async open(file, flags) {
          const handle = await nodeStoreFs.open(file, flags);
          const name = relative(file) || '.';
          return {
            ...handle,
            write: async (data) => {
              ops.push(`write ${name} ${data.length}`);
              const failure = options.failWrite?.(file);
              if (failure === 'before') throw new Error('disk full');
              await handle.write(data);
              if (failure === 'after') throw new Error('fsync failed');
            },
            datasync: () => {
              ops.push(`datasync ${name}`);
              return handle.datasync();
            },
            sync: () => {
              ops.push(`sync ${name}`);
              return handle.sync();
            },
            truncate: (length) => {
              ops.push(`truncate ${name} ${length}`);
              return handle.truncate(length);
            },
          };
        },
      };
      return { ops, reads, fs };
    },
  };
}
