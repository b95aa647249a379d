import { closeSync, fsyncSync, mkdirSync, openSync, readdirSync, rmSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import type { Fact, NewFact, PartialSnapshot } from '../events/facts.ts';
import { defaultPartialChars } from './bound-partial.ts';
import { DurableFileAdapter, isTempFileName } from './durable-file-adapter.ts';
import {
  type AppendOptions,
  type AppendResult,
  type EventStore,
  type OpenRun,
  StoreClosedError,
  type StoreFinding,
  StoreInputError,
} from './event-store.ts';
import { FactListeners, type ListenerErrorHandler } from './fact-listeners.ts';
import { GroupCommit, type SessionSlot, type SessionState } from './group-commit.ts';
import { PartialFiles } from './partial-files.ts';
import { cloneJson } from './plain-json.ts';
import {
  isSessionFolderName,
  loadSession,
  mapLimit,
  readTail,
  type SegmentAdapterFactory,
  type SegmentDocument,
  sessionFolderName,
  sessionIdOfFolder,
} from './session-files.ts';
import { checkFromSeq, checkSessionId } from './session-log.ts';
import { acquireStoreLock, type StoreLock } from './store-lock.ts';

/** Options of `lowdbStore`. */
export interface LowdbStoreOptions {
  /** The store's folder (created if missing), e.g. `.turnlog`. One process at a time. */
  dir: string;
  /** Facts per segment file (default 256): an append rewrites at most the tail segment. */
  segmentSize?: number;
  /** Bound of a partial snapshot's `text` and `reasoning`, in characters (default 16 KiB). */
  partialChars?: number;
  /** Called when a subscriber throws (default: a process warning). */
  onListenerError?: ListenerErrorHandler;
  /**
   * Makes the lowdb adapter of each segment file (default: `DurableFileAdapter`, temp file →
   * fsync → rename → fsync of the folder). Wrap the default to observe or encrypt writes.
   */
  createAdapter?: SegmentAdapterFactory;
}

/**
 * The default, durable `EventStore`: lowdb documents in a folder, one sub-folder per session,
 * split into segment files of `segmentSize` facts. Appends that arrive together are committed in
 * one write per touched segment; each append resolves once its facts are on disk. A lock file
 * keeps a second process out. See architecture/store.md for the layout and the durability.
 *
 * @example
 * const store = lowdbStore({ dir: '.turnlog' }); // throws StoreLockedError if another process has it
 * await store.append('session_1', [fact], { expectedSeq: 0 });
 * await store.close();
 */
export function lowdbStore(options: LowdbStoreOptions): EventStore {
  return new LowdbStore(options);
}

class LowdbStore implements EventStore {
  readonly #dir: string;
  readonly #sessionsDir: string;
  readonly #createAdapter: SegmentAdapterFactory;
  readonly #listeners: FactListeners;
  readonly #partials: PartialFiles;
  readonly #lock: StoreLock;
  readonly #sessions = new Map<string, SessionSlot>();
  readonly #commit: GroupCommit;
  readonly #inFlight = new Set<Promise<unknown>>();
  /** Sessions dropped after a failed write: the last seq their subscribers were given. */
  readonly #publishedThrough = new Map<string, number>();
  #closed = false;
  #closing: Promise<void> | undefined;

  constructor(options: LowdbStoreOptions) {
    const segmentSize = options.segmentSize ?? 256;
    if (!Number.isInteger(segmentSize) || segmentSize < 1) {
      throw new StoreInputError({
        message: `lowdbStore: segmentSize must be a whole number >= 1, got ${String(segmentSize)}`,
        sessionId: undefined,
      });
    }
    this.#dir = path.resolve(options.dir);
    this.#sessionsDir = path.join(this.#dir, 'sessions');
    this.#createAdapter =
      options.createAdapter ?? ((file) => new DurableFileAdapter<SegmentDocument>(file));
    this.#listeners = new FactListeners({ onListenerError: options.onListenerError });
    const created = mkdirSync(this.#dir, { recursive: true });
    this.#lock = acquireStoreLock(this.#dir);
    const partialsDir = path.join(this.#dir, 'partials');
    try {
      const madeSessions = mkdirSync(this.#sessionsDir, { recursive: true });
      const madePartials = mkdirSync(partialsDir, { recursive: true });
      if (created !== undefined || madeSessions !== undefined || madePartials !== undefined) {
        syncFolderNow(this.#dir);
      }
      removeLeftovers(this.#sessionsDir, partialsDir);
    } catch (error) {
      this.#lock.release();
      throw error;
    }
    this.#commit = new GroupCommit({
      sessionsDir: this.#sessionsDir,
      segmentSize,
      createAdapter: this.#createAdapter,
      publish: (sessionId, facts) => this.#listeners.publish(sessionId, facts),
      forget: (slot) => this.#forget(slot),
    });
    this.#partials = new PartialFiles({
      dir: partialsDir,
      maxChars: options.partialChars ?? defaultPartialChars,
    });
  }

  append(
    sessionId: string,
    facts: readonly NewFact[],
    options?: AppendOptions,
  ): Promise<AppendResult> {
    return this.#operation('append', sessionId, (slot, state, resolve) => {
      const appended = state.log.append(facts, options);
      const result = { appended: appended.map(cloneJson), lastSeq: state.log.lastSeq };
      // A repeat of facts still in flight waits for them too: it answers only for durable facts.
      return this.#commit.durable(slot, state, state.log.lastSeq).then(() => resolve(result));
    });
  }

  read(sessionId: string, options: { fromSeq?: number } = {}): Promise<Fact[]> {
    return this.#operation('read', sessionId, (slot, state, resolve) => {
      checkFromSeq(options.fromSeq, `lowdbStore.read('${sessionId}')`);
      // Appends made before this read are waited for, so the last seq it returns is the one
      // expectedSeq is checked against; after a failed write it answers with what is durable.
      const throughSeq = state.log.lastSeq;
      const answer = () =>
        resolve(state.log.read(options.fromSeq, Math.min(throughSeq, state.durableSeq)));
      return this.#commit.durable(slot, state, throughSeq).then(answer, answer);
    });
  }

  subscribe(sessionId: string, listener: (fact: Fact) => void): () => void {
    this.#checkOpen('subscribe');
    checkSessionId(sessionId, 'lowdbStore.subscribe');
    return this.#listeners.add(sessionId, listener);
  }

  async openRuns(): Promise<OpenRun[]> {
    this.#checkOpen('openRuns');
    const found = await this.#track(this.#durableSessions());
    return found.flatMap(({ openRuns }) => openRuns);
  }

  async findings(): Promise<StoreFinding[]> {
    this.#checkOpen('findings');
    // Nothing is cut yet: a session that cannot be read throws StoreCorruptionError when used.
    return [];
  }

  async sessions(): Promise<string[]> {
    this.#checkOpen('sessions');
    const found = await this.#track(this.#durableSessions());
    return found.map(({ sessionId }) => sessionId);
  }

  async savePartial(sessionId: string, partial: PartialSnapshot): Promise<void> {
    this.#checkOpen('savePartial');
    checkSessionId(sessionId, 'lowdbStore.savePartial');
    return this.#track(this.#partials.save(sessionId, partial));
  }

  async loadPartial(sessionId: string): Promise<PartialSnapshot | undefined> {
    this.#checkOpen('loadPartial');
    checkSessionId(sessionId, 'lowdbStore.loadPartial');
    return this.#track(this.#partials.load(sessionId));
  }

  async clearPartial(sessionId: string): Promise<void> {
    this.#checkOpen('clearPartial');
    checkSessionId(sessionId, 'lowdbStore.clearPartial');
    return this.#track(this.#partials.clear(sessionId));
  }

  close(): Promise<void> {
    // Closing twice is harmless; every other call after close throws StoreClosedError.
    this.#closed = true;
    this.#closing ??= (async () => {
      // Everything called before close finishes: pending appends become durable first.
      while (this.#inFlight.size > 0) await Promise.allSettled([...this.#inFlight]);
      await this.#commit.idle();
      this.#listeners.clear();
      this.#lock.release();
    })();
    return this.#closing;
  }

  /**
   * Runs `work` on the loaded session, in call order per session, tracking it for `close()`.
   * `work` settles the operation through `resolve`; a throw rejects it.
   */
  #operation<TResult>(
    method: string,
    sessionId: string,
    work: (
      slot: SessionSlot,
      state: SessionState,
      resolve: (value: TResult) => void,
    ) => Promise<void> | void,
  ): Promise<TResult> {
    try {
      this.#checkOpen(method);
      checkSessionId(sessionId, `lowdbStore.${method}`);
    } catch (error) {
      return Promise.reject(error);
    }
    const promise = new Promise<TResult>((resolve, reject) => {
      const slot = this.#slot(sessionId);
      const run = (state: SessionState) => {
        try {
          const pending = work(slot, state, resolve);
          pending?.catch(reject);
        } catch (error) {
          reject(error);
        }
      };
      if (slot.loaded !== undefined) run(slot.loaded);
      else slot.queued.push({ run, fail: reject });
    });
    return this.#track(promise);
  }

  #slot(sessionId: string): SessionSlot {
    const known = this.#sessions.get(sessionId);
    if (known !== undefined) return known;
    const folder = path.join(this.#sessionsDir, sessionFolderName(sessionId));
    const session: SessionSlot = { sessionId, folder, loaded: undefined, queued: [] };
    this.#sessions.set(sessionId, session);
    loadSession({ folder, sessionId, createAdapter: this.#createAdapter }).then(
      (loaded) => {
        const published = this.#publishedThrough.get(sessionId);
        this.#publishedThrough.delete(sessionId);
        session.loaded = {
          log: loaded.log,
          onDisk: loaded.onDisk,
          segments: loaded.segments,
          durableSeq: loaded.log.lastSeq,
          durableOpenRuns: loaded.openRuns,
          waiters: [],
        };
        // A failed write may have reached the disk: what it stored is durable now, so subscribers
        // get it (once each) before anything appended from here on.
        if (published !== undefined) {
          this.#listeners.publish(sessionId, loaded.log.slice(published + 1, loaded.log.lastSeq));
        }
        for (const item of session.queued.splice(0)) item.run(session.loaded);
      },
      (error: unknown) => {
        // Only this session fails; the next call tries to load it again.
        this.#forget(session);
        for (const item of session.queued.splice(0)) item.fail(error);
      },
    );
    return session;
  }

  #forget(slot: SessionSlot): void {
    if (slot.loaded !== undefined) {
      this.#publishedThrough.set(slot.sessionId, slot.loaded.durableSeq);
    }
    if (this.#sessions.get(slot.sessionId) === slot) this.#sessions.delete(slot.sessionId);
    this.#commit.discard(slot);
  }

  /** Every session with durable facts, sorted by id, with its open runs. */
  async #durableSessions(): Promise<{ sessionId: string; openRuns: OpenRun[] }[]> {
    const names = await readdir(this.#sessionsDir);
    const byId = new Map<string, OpenRun[]>();
    const unloaded: { name: string; sessionId: string | undefined }[] = [];
    for (const name of names) {
      const sessionId = sessionIdOfFolder(name);
      const state = sessionId === undefined ? undefined : this.#sessions.get(sessionId)?.loaded;
      if (state !== undefined && sessionId !== undefined) {
        if (state.durableSeq > 0) byId.set(sessionId, [...state.durableOpenRuns.values()]);
      } else if (isSessionFolderName(name)) {
        unloaded.push({ name, sessionId });
      }
    }
    // openRuns after a reopen reads one tail segment per session, never whole sessions.
    const tails = await mapLimit(unloaded, 16, ({ name, sessionId }) =>
      readTail({
        folder: path.join(this.#sessionsDir, name),
        sessionId,
        createAdapter: this.#createAdapter,
      }),
    );
    for (const tail of tails) {
      if (tail === undefined) continue;
      const state = this.#sessions.get(tail.sessionId)?.loaded;
      byId.set(tail.sessionId, state ? [...state.durableOpenRuns.values()] : tail.openRuns);
    }
    return [...byId.keys()].sort().map((sessionId) => ({
      sessionId,
      openRuns: (byId.get(sessionId) ?? []).map((run) => ({ ...run })),
    }));
  }

  #track<TResult>(promise: Promise<TResult>): Promise<TResult> {
    this.#inFlight.add(promise);
    const forget = () => this.#inFlight.delete(promise);
    promise.then(forget, forget);
    return promise;
  }

  #checkOpen(method: string): void {
    if (this.#closed) {
      throw new StoreClosedError({
        message: `lowdbStore.${method}: the store at ${this.#dir} is closed; open it again with lowdbStore({ dir }) to go on`,
      });
    }
  }
}

function syncFolderNow(folder: string): void {
  const descriptor = openSync(folder, 'r');
  try {
    fsyncSync(descriptor);
  } catch (error) {
    if (process.platform !== 'win32') throw error;
  } finally {
    closeSync(descriptor);
  }
}

/** Removes what a killed process left: staging folders of new sessions, partial temp files. */
function removeLeftovers(sessionsDir: string, partialsDir: string): void {
  for (const name of readdirSync(sessionsDir)) {
    if (name.startsWith('.new-'))
      rmSync(path.join(sessionsDir, name), { recursive: true, force: true });
  }
  for (const name of readdirSync(partialsDir)) {
    if (isTempFileName(name)) rmSync(path.join(partialsDir, name), { force: true });
  }
}
