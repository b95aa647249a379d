import path from 'node:path';
import {
  StoreCorruptionError,
  StoreError,
  type StoreFinding,
  type StoreWriteError,
} from '../event-store.ts';
import type { GroupCommit, SessionSlot, SessionState } from './group-commit.ts';
import { loadSession } from './load-session.ts';
import { sessionFolderName } from './session-files.ts';
import { errorCode, type StoreFs } from './store-fs.ts';

/**
 * The sessions `lowdbStore` holds in memory, at most `maxCached` of those with nothing pending
 * (least recently used first out). A session is loaded on first use — calls made meanwhile queue
 * in order — and reloaded from disk after it was evicted or after a failed write dropped it. A
 * session with work in flight (loading, queued calls, appends not yet durable, a write) is never
 * evicted, so group commit and subscribers never see the difference.
 */
export class SessionSlots {
  readonly #fs: StoreFs;
  readonly #sessionsDir: string;
  readonly #maxCached: number;
  readonly #commit: () => GroupCommit;
  readonly #onFinding: (finding: StoreFinding) => void;
  /** In use order: the least recently used first. */
  readonly #slots = new Map<string, SessionSlot>();
  /** Sessions whose failed write could not be undone: refused until the store is reopened. */
  readonly #refused = new Map<string, StoreWriteError>();

  constructor(options: {
    fs: StoreFs;
    sessionsDir: string;
    maxCached: number;
    commit: () => GroupCommit;
    onFinding: (finding: StoreFinding) => void;
  }) {
    this.#fs = options.fs;
    this.#sessionsDir = options.sessionsDir;
    this.#maxCached = options.maxCached;
    this.#commit = options.commit;
    this.#onFinding = options.onFinding;
  }

  /** Why the session refuses every call (a failed write that could not be undone), if it does. */
  refusal(sessionId: string): StoreWriteError | undefined {
    return this.#refused.get(sessionId);
  }

  /** The loaded state of a session, if it is in memory now. */
  loaded(sessionId: string): SessionState | undefined {
    return this.#slots.get(sessionId)?.loaded;
  }

  /**
   * Runs `work` on the loaded session, in call order per session; rejects when the session
   * cannot be loaded. The slot counts as busy until the returned promise settles.
   */
  use<TResult>(
    sessionId: string,
    work: (slot: SessionSlot, state: SessionState) => Promise<TResult>,
  ): Promise<TResult> {
    const refusal = this.#refused.get(sessionId);
    if (refusal !== undefined) return Promise.reject(refusal);
    const slot = this.#slot(sessionId);
    slot.busy += 1;
    const promise = new Promise<TResult>((resolve, reject) => {
      const run = (state: SessionState) => {
        try {
          work(slot, state).then(resolve, reject);
        } catch (error) {
          reject(error);
        }
      };
      if (slot.loaded !== undefined) run(slot.loaded);
      else slot.queued.push({ run, fail: reject });
    });
    const settle = () => {
      slot.busy -= 1;
      this.#evict();
    };
    promise.then(settle, settle);
    return promise;
  }

  /**
   * Drops a slot after a failed write: the session is reloaded from disk on next use, or, with a
   * `refusal` (the write could not be undone), every later call on it rejects with that error.
   */
  forget(slot: SessionSlot, refusal: StoreWriteError | undefined): void {
    // A failed write was undone before this (group-commit.ts): the disk holds exactly the facts
    // through durableSeq, so a reload finds nothing its subscribers were not given.
    if (refusal !== undefined) this.#refused.set(slot.sessionId, refusal);
    this.drop(slot);
  }

  /**
   * Drops a slot whose session was replaced or removed on disk as a whole (an import, a purge):
   * the session is read from disk again on next use, and its subscribers were told already.
   */
  drop(slot: SessionSlot): void {
    if (this.#slots.get(slot.sessionId) === slot) this.#slots.delete(slot.sessionId);
    this.#commit().discard(slot);
  }

  #slot(sessionId: string): SessionSlot {
    const known = this.#slots.get(sessionId);
    if (known !== undefined) {
      // Most recently used last.
      this.#slots.delete(sessionId);
      this.#slots.set(sessionId, known);
      return known;
    }
    const folder = path.join(this.#sessionsDir, sessionFolderName(sessionId));
    const slot: SessionSlot = { sessionId, folder, loaded: undefined, queued: [], busy: 0 };
    this.#slots.set(sessionId, slot);
    this.#evict();
    loadSession({ fs: this.#fs, folder, sessionId }).then(
      (loaded) => {
        for (const finding of loaded.findings) this.#onFinding(finding);
        slot.loaded = {
          log: loaded.log,
          onDisk: loaded.onDisk,
          segments: loaded.segments,
          tail: loaded.tail,
          durableSeq: loaded.log.lastSeq,
          durableOpenRuns: loaded.openRuns,
          waiters: [],
        };
        for (const item of slot.queued.splice(0)) item.run(slot.loaded);
      },
      (cause: unknown) => {
        const error = unreadable(cause, folder, sessionId);
        this.#onFinding(findingOf(error, sessionId, folder));
        // Only this session fails; the next call tries to load it again.
        if (this.#slots.get(sessionId) === slot) this.#slots.delete(sessionId);
        for (const item of slot.queued.splice(0)) item.fail(error);
      },
    );
    return slot;
  }

  /** Evicts least recently used idle sessions while more than `maxCached` are in memory. */
  #evict(): void {
    if (this.#slots.size <= this.#maxCached) return;
    const commit = this.#commit();
    for (const [sessionId, slot] of this.#slots) {
      if (this.#slots.size <= this.#maxCached) return;
      const state = slot.loaded;
      const idle =
        state !== undefined &&
        slot.busy === 0 &&
        slot.queued.length === 0 &&
        state.waiters.length === 0 &&
        !commit.pending(slot);
      if (idle) this.#slots.delete(sessionId);
    }
  }
}

/**
 * What a session that cannot be read becomes: its `StoreCorruptionError` as it is; a system
 * error (a permission, an I/O error, a folder where a file should be) as a `StoreError` naming
 * the path, and the session when it is one session's file; anything else unchanged.
 */
export function unreadable(error: unknown, folder: string, sessionId?: string): unknown {
  const code = errorCode(error);
  if (StoreCorruptionError.isInstance(error) || code === undefined) return error;
  const where = (error as { path?: unknown }).path;
  const file = typeof where === 'string' ? where : folder;
  const reason = error instanceof Error ? error.message : String(error);
  return new StoreError({
    message: `lowdbStore: cannot read ${file} (${reason}); check that this process may read and write ${folder} and what it holds`,
    path: file,
    code,
    sessionId,
    cause: error,
  });
}

/** The `unreadable` finding for an error that kept a session from being read. */
export function findingOf(
  error: unknown,
  sessionId: string | undefined,
  folder: string,
): StoreFinding {
  const message = error instanceof Error ? error.message : String(error);
  if (StoreCorruptionError.isInstance(error)) {
    return { sessionId, kind: 'unreadable', file: error.file, line: error.line, message };
  }
  const file = StoreError.isInstance(error) ? error.path : folder;
  return { sessionId, kind: 'unreadable', file, line: undefined, message };
}
