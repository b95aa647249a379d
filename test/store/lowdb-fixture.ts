import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Adapter } from 'lowdb';
import { afterEach, beforeEach } from 'vitest';
import { DurableFileAdapter } from '../../store/durable-file-adapter.ts';
import type { EventStore } from '../../store/event-store.ts';
import { type LowdbStoreOptions, lowdbStore } from '../../store/lowdb-store.ts';
import type { SegmentDocument } from '../../store/session-files.ts';
import { storeFacts } from './store-facts.ts';

/**
 * A fresh temp folder per test for lowdbStore tests, with helpers to open stores on it (closed
 * after the test), find segment files, fill sessions and observe the store's adapter.
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

  const relative = (file: string) => path.relative(dir, file).replace(/\.new-\d+-\d+/, '.new');

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
    /** The path of a session's segment file. */
    segment(session: string, index: number): string {
      return path.join(dir, 'sessions', session, `${String(index).padStart(6, '0')}.json`);
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
    /** Records every segment read and write through the store's lowdb adapter; can fail writes. */
    observedAdapters(
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
    },
  };
}
