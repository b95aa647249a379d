import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Fact } from '../../events/facts.ts';
import type { EventStore } from '../../store/event-store.ts';
import type { ListenerErrorHandler } from '../../store/fact-listeners.ts';
import { lowdbStore } from '../../store/folder/lowdb-store.ts';
import { memoryStore } from '../../store/memory/memory-store.ts';
import type { SessionRetention } from '../../store/session-retention.ts';
import { testSchema } from '../helpers/postgres.ts';

/** The options a contract test may open a store with. */
export interface StoreOptions {
  onListenerError?: ListenerErrorHandler;
}

/** Every turnlog store: the `EventStore` contract and retention's part. */
export type RetainingStore = EventStore & SessionRetention;

/** One store under test, and how to "reopen" it (a new store over what the old one kept). */
export interface Harness {
  open(options?: StoreOptions): RetainingStore;
  reopen(store: EventStore): Promise<RetainingStore>;
  cleanup(): Promise<void>;
}

/** Every fact of every session of a store, sessions in `sessions()` order. */
export async function readEverything(store: EventStore): Promise<Fact[]> {
  const sessions = await store.sessions();
  const all = await Promise.all(sessions.map((sessionId) => store.read(sessionId)));
  return all.flat();
}

/** Every store, for `describe.each`: the EventStore contract suite runs against each. */
export const storeHarnesses: { name: string; create: () => Promise<Harness> }[] = [
  {
    name: 'memoryStore',
    create: async () => ({
      open: (options) => memoryStore(options),
      reopen: async (store) => {
        const facts = await readEverything(store);
        await store.close();
        return memoryStore({ facts });
      },
      cleanup: async () => {},
    }),
  },
  {
    name: 'lowdbStore',
    create: async () => {
      const dir = await mkdtemp(path.join(tmpdir(), 'turnlog-contract-'));
      return {
        // Tiny segments, so every contract case also crosses segment files.
        open: (options) => lowdbStore({ dir, segmentSize: 3, ...options }),
        reopen: async (store) => {
          await store.close();
          return lowdbStore({ dir, segmentSize: 3 });
        },
        cleanup: () => rm(dir, { recursive: true, force: true }),
      };
    },
  },
  {
    name: 'postgresStore',
    create: async () => {
      // A schema per test; a reopen is a new store (a new pool) on the same schema.
      const database = testSchema('contract');
      return {
        open: (options) => database.open(options),
        reopen: async (store) => {
          await store.close();
          return database.open();
        },
        cleanup: () => database.drop(),
      };
    },
  },
];
