import { StoreInputError } from '../event-store.ts';
import type { ListenerErrorHandler } from '../fact-listeners.ts';
import type { StoreFs } from './store-fs.ts';

/** Options of `lowdbStore`. */
export interface LowdbStoreOptions {
  /** The store's folder (created if missing), e.g. `.turnlog`. One process at a time. */
  dir: string;
  /** Facts per segment file (default 256): the record is rewritten once per segment. */
  segmentSize?: number;
  /**
   * Sessions kept in memory with nothing pending (default 1,000); the least recently used are
   * evicted past it and read from disk again on next use. Sessions with work in flight are kept.
   */
  maxCachedSessions?: number;
  /** Bound of a partial snapshot's `text` and `reasoning`, in characters (default 16 KiB). */
  partialChars?: number;
  /** Called when a subscriber throws (default: a process warning). */
  onListenerError?: ListenerErrorHandler;
  /**
   * The file system the store reads and writes its sessions through (default: Node's `fs`).
   * Wrap it to observe or fail the store's writes; opening the folder and the lock use Node's.
   */
  fs?: StoreFs;
}

const knownOptions = new Set([
  'dir',
  'segmentSize',
  'maxCachedSessions',
  'partialChars',
  'onListenerError',
  'fs',
]);

/** Checks `lowdbStore`'s options: a folder, known keys only, whole numbers in range. */
export function checkOptions(options: LowdbStoreOptions): void {
  const where = 'lowdbStore';
  if (
    typeof options !== 'object' ||
    options === null ||
    typeof options.dir !== 'string' ||
    options.dir === ''
  ) {
    throw new StoreInputError({
      message: `${where}: options.dir must be the store's folder (a non-empty string), got ${JSON.stringify((options as { dir?: unknown } | null)?.dir)}`,
      sessionId: undefined,
    });
  }
  for (const key of Object.keys(options)) {
    if (knownOptions.has(key)) continue;
    const hint =
      key === 'createAdapter'
        ? " (segments are no longer lowdb documents since 0.2: pass fs to observe or fail the store's writes)"
        : '';
    throw new StoreInputError({
      message: `${where}: unknown option ${key}${hint}; the options are ${[...knownOptions].join(', ')}`,
      sessionId: undefined,
    });
  }
  for (const [key, minimum] of [
    ['segmentSize', 1],
    ['maxCachedSessions', 0],
  ] as const) {
    const value = options[key];
    if (value !== undefined && !(Number.isInteger(value) && value >= minimum)) {
      throw new StoreInputError({
        message: `${where}: ${key} must be a whole number >= ${minimum}, got ${String(value)}`,
        sessionId: undefined,
      });
    }
  }
}
