import path from 'node:path';
import type { Fact, NewFact, PartialSnapshot } from '../../events/facts.ts';
import { defaultPartialChars } from '../bound-partial.ts';
import {
  type AppendOptions,
  type AppendResult,
  type EventStore,
  type OpenRun,
  StoreClosedError,
  StoreCorruptionError,
  StoreError,
  type StoreFinding,
  StoreWriteError,
} from '../event-store.ts';
import { FactListeners } from '../fact-listeners.ts';
import { cloneJson } from '../plain-json.ts';
import { checkEndedBefore, endedSessionOf, importedLog } from '../retention/ended-session.ts';
import { checkFromSeq, checkSessionId, type SessionLog } from '../session-log.ts';
import type {
  EndedSession,
  RemovedSession,
  SessionRetention,
  SessionToRemove,
} from '../session-retention.ts';
import { folderExists, retireSessionFolder, writeWholeSession } from './folder-retention.ts';
import { GroupCommit, type SessionSlot, type SessionState } from './group-commit.ts';
import { checkOptions, type LowdbStoreOptions } from './lowdb-store-options.ts';
import { openStoreFolder } from './open-store-folder.ts';
import { PartialFiles } from './partial-files.ts';
import { readTail, type SessionTail } from './read-tail.ts';
import { isSessionFolderName, mapLimit, sessionIdOfFolder } from './session-files.ts';
import { findingOf, SessionSlots, unreadable } from './session-slots.ts';
import { nodeStoreFs, type StoreFs, syncFolder } from './store-fs.ts';
import type { StoreLock } from './store-lock.ts';

/** Options of `lowdbStore` (declared beside their check, in lowdb-store-options.ts). */
export type { LowdbStoreOptions } from './lowdb-store-options.ts';

/**
 * The default, durable `EventStore`: a folder with one sub-folder per session, split into
 * append-only segment files (JSON Lines) of `segmentSize` facts, plus a small record per session
 * listing its segments. Appends that arrive together are committed in one write and one
 * `fdatasync` per session; each append resolves once its facts are on disk. Idle sessions are
 * evicted from memory past `maxCachedSessions`. A lock file keeps a second process out. See
 * architecture/store.md for the layout and the durability.
 *
 * @example
 * const store = lowdbStore({ dir: '.turnlog' }); // throws StoreLockedError if another process has it
 * await store.append('session_1', [fact], { expectedSeq: 0 });
 * await store.close();
 */
export function lowdbStore(options: LowdbStoreOptions): EventStore & SessionRetention {
  return new LowdbStore(options);
}

class LowdbStore implements EventStore, SessionRetention {
  readonly #dir: string;
  readonly #sessionsDir: string;
  readonly #fs: StoreFs;
  readonly #listeners: FactListeners;
  readonly #partials: PartialFiles;
  readonly #lock: StoreLock;
  readonly #slots: SessionSlots;
  readonly #commit: GroupCommit;
  readonly #inFlight = new Set<Promise<unknown>>();
  readonly #findings = new Map<string, StoreFinding>();
  /** Per session, the import or removal in progress: its other operations wait for it. */
  readonly #barriers = new Map<string, Promise<void>>();
  readonly #segmentSize: number;
  #closed = false;
  #closing: Promise<void> | undefined;

  constructor(options: LowdbStoreOptions) {
    checkOptions(options);
    const segmentSize = options.segmentSize ?? 256;
    this.#segmentSize = segmentSize;
    this.#dir = path.resolve(options.dir);
    this.#sessionsDir = path.join(this.#dir, 'sessions');
    this.#fs = options.fs ?? nodeStoreFs;
    this.#listeners = new FactListeners({ onListenerError: options.onListenerError });
    const partialsDir = path.join(this.#dir, 'partials');
    this.#lock = openStoreFolder(this.#dir, this.#sessionsDir, partialsDir);
    const publish = (sessionId: string, facts: readonly Fact[]) =>
      this.#listeners.publish(sessionId, facts);
    this.#slots = new SessionSlots({
      fs: this.#fs,
      sessionsDir: this.#sessionsDir,
      maxCached: options.maxCachedSessions ?? 1_000,
      commit: () => this.#commit,
      onFinding: (finding) => this.#addFinding(finding),
    });
    this.#commit = new GroupCommit({
      fs: this.#fs,
      sessionsDir: this.#sessionsDir,
      segmentSize,
      publish,
      forget: (slot, refusal) => this.#slots.forget(slot, refusal),
    });
    this.#partials = new PartialFiles({
      fs: this.#fs,
      dir: partialsDir,
      maxChars: options.partialChars ?? defaultPartialChars,
    });
  }

  append(
    sessionId: string,
    facts: readonly NewFact[],
    options?: AppendOptions,
  ): Promise<AppendResult> {
    return this.#operation('append', sessionId, async (slot, state) => {
      const appended = state.log.append(facts, options);
      const result = { appended: appended.map(cloneJson), lastSeq: state.log.lastSeq };
      // A repeat of facts still in flight waits for them too: it answers only for durable facts.
      await this.#commit.durable(slot, state, state.log.lastSeq);
      return result;
    });
  }

  read(sessionId: string, options: { fromSeq?: number } = {}): Promise<Fact[]> {
    return this.#operation('read', sessionId, async (slot, state) => {
      checkFromSeq(options.fromSeq, `lowdbStore.read('${sessionId}')`);
      // Appends made before this read are waited for, so the last seq it returns is the one
      // expectedSeq is checked against; after a failed write it answers with what is durable.
      const throughSeq = state.log.lastSeq;
      await this.#commit.durable(slot, state, throughSeq).catch(() => {});
      return state.log.read(options.fromSeq, Math.min(throughSeq, state.durableSeq));
    });
  }

  subscribe(sessionId: string, listener: (fact: Fact) => void): () => void {
    this.#checkOpen('subscribe');
    checkSessionId(sessionId, 'lowdbStore.subscribe');
    return this.#listeners.add(sessionId, listener);
  }

  async openRuns(): Promise<OpenRun[]> {
    this.#checkOpen('openRuns');
    return this.#track(this.#openRuns());
  }

  async findings(): Promise<StoreFinding[]> {
    this.#checkOpen('findings');
    return [...this.#findings.values()].map((finding) => ({ ...finding }));
  }

  async sessions(): Promise<string[]> {
    this.#checkOpen('sessions');
    return this.#track(this.#sessionIds());
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

  async endedSessions(options: { endedBefore: Date }): Promise<EndedSession[]> {
    this.#checkOpen('endedSessions');
    checkEndedBefore(options?.endedBefore, 'lowdbStore.endedSessions');
    const tails = await this.#track(this.#tails());
    return tails
      .map(({ sessionId, openRuns, lastSeq, lastFact }) =>
        endedSessionOf({
          sessionId,
          lastSeq,
          openRuns: openRuns.length,
          lastFact,
          endedBefore: options.endedBefore,
        }),
      )
      .filter((session) => session !== undefined);
  }

  async removeSessions(sessions: readonly SessionToRemove[]): Promise<RemovedSession[]> {
    this.#checkOpen('removeSessions');
    return this.#track(this.#removeSessions(sessions));
  }

  importFacts(sessionId: string, facts: readonly Fact[]): Promise<'imported' | 'exists'> {
    let log: SessionLog;
    try {
      checkSessionId(sessionId, 'lowdbStore.importFacts');
      log = importedLog({ sessionId, facts, storeName: 'lowdbStore' });
    } catch (error) {
      return Promise.reject(error);
    }
    return this.#alone('importFacts', sessionId, async (slot, state) => {
      if (state.onDisk || state.log.lastSeq > 0) return 'exists';
      const outcome = await writeWholeSession({
        fs: this.#fs,
        sessionsDir: this.#sessionsDir,
        folder: slot.folder,
        log,
        segmentSize: this.#segmentSize,
      });
      if (outcome === 'imported') this.#listeners.publish(sessionId, log.read());
      return outcome;
    });
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

  /** Runs `work` on the loaded session, in call order per session, tracked for `close()`. */
  #operation<TResult>(
    method: string,
    sessionId: string,
    work: (slot: SessionSlot, state: SessionState) => Promise<TResult>,
  ): Promise<TResult> {
    try {
      this.#checkOpen(method);
      checkSessionId(sessionId, `lowdbStore.${method}`);
    } catch (error) {
      return Promise.reject(error);
    }
    // An import or a removal of the session in progress: start after it (in call order).
    const barrier = this.#barriers.get(sessionId);
    const use = () => this.#slots.use(sessionId, work);
    return this.#track(barrier === undefined ? use() : barrier.then(use));
  }

  /**
   * Runs `work` on the session once every operation called before it is done and its appends are
   * durable, and starts no other operation of the session until it settles; the session is then
   * read from disk again on next use (`work` replaced or removed its folder whole).
   */
  #alone<TResult>(
    method: string,
    sessionId: string,
    work: (slot: SessionSlot, state: SessionState) => Promise<TResult>,
  ): Promise<TResult> {
    const result = this.#operation(method, sessionId, async (slot, state) => {
      await this.#commit.durable(slot, state, state.log.lastSeq).catch(() => {});
      try {
        return await work(slot, state);
      } finally {
        this.#slots.drop(slot);
      }
    });
    const barrier = result.then(
      () => {},
      () => {},
    );
    this.#barriers.set(sessionId, barrier);
    void barrier.then(() => {
      if (this.#barriers.get(sessionId) === barrier) this.#barriers.delete(sessionId);
    });
    return result;
  }

  /**
   * Each session still at its `lastSeq` with no open run leaves the store by a rename of its
   * folder; one fsync of the sessions folder makes every rename durable, then the folders are
   * deleted (what a crash leaves of them is deleted at the next open).
   */
  async #removeSessions(sessions: readonly SessionToRemove[]): Promise<RemovedSession[]> {
    const retired: { sessionId: string; tombstone: string }[] = [];
    const outcomes = await mapLimit(sessions, 8, async ({ sessionId, lastSeq }) => {
      const remove = async (slot: SessionSlot, state: SessionState) => {
        if (!state.onDisk || state.log.lastSeq === 0) return 'absent' as const;
        const { durableSeq } = state;
        if (durableSeq !== lastSeq || state.log.lastSeq !== lastSeq) return 'changed' as const;
        if (state.durableOpenRuns.size > 0) return 'changed' as const;
        const tombstone = await retireSessionFolder(this.#fs, this.#sessionsDir, slot.folder);
        retired.push({ sessionId, tombstone });
        return 'removed' as const;
      };
      try {
        return { sessionId, outcome: await this.#alone('removeSessions', sessionId, remove) };
      } catch (error) {
        const unusable = [StoreCorruptionError, StoreError, StoreWriteError];
        if (!unusable.some((type) => type.isInstance(error))) throw error;
        return { sessionId, outcome: 'unreadable' as const };
      }
    });
    if (retired.length > 0) await syncFolder(this.#fs, this.#sessionsDir);
    await mapLimit(retired, 8, async ({ sessionId, tombstone }) => {
      await this.#fs.removeFolder(tombstone);
      await this.#partials.clear(sessionId);
    });
    return outcomes;
  }

  /** Session folders, with the id each stands for (`undefined`: a hashed name). */
  async #folders(): Promise<{ folder: string; sessionId: string | undefined }[]> {
    const names = await this.#fs.readdir(this.#sessionsDir).catch((error: unknown) => {
      throw unreadable(error, this.#sessionsDir);
    });
    return names.filter(isSessionFolderName).map((name) => ({
      folder: path.join(this.#sessionsDir, name),
      sessionId: sessionIdOfFolder(name),
    }));
  }

  async #sessionIds(): Promise<string[]> {
    const folders = await this.#folders();
    const ids = await mapLimit(folders, 16, async ({ folder, sessionId }) => {
      if (sessionId !== undefined) return sessionId;
      // A hashed name: the id is in the record or the tail.
      return (await this.#readTail(folder, undefined))?.sessionId;
    });
    return ids.filter((id): id is string => id !== undefined).sort();
  }

  async #openRuns(): Promise<OpenRun[]> {
    const tails = await this.#tails();
    return tails.flatMap(({ openRuns }) => openRuns.map((run) => ({ ...run })));
  }

  /**
   * What every readable session ends with (its open runs, last seq and last fact), in id order:
   * from memory for a loaded session, else from its record and tail segment — after a reopen this
   * reads one record and one tail segment per session, never whole ones.
   */
  async #tails(): Promise<SessionTail[]> {
    const folders = await this.#folders();
    const fromMemory = (sessionId: string | undefined) => {
      const loaded = sessionId === undefined ? undefined : this.#slots.loaded(sessionId);
      if (loaded === undefined || sessionId === undefined) return undefined;
      const { durableSeq } = loaded;
      return {
        sessionId,
        openRuns: [...loaded.durableOpenRuns.values()],
        lastSeq: durableSeq,
        lastFact: loaded.log.slice(durableSeq, durableSeq)[0],
      };
    };
    const found = await mapLimit(folders, 16, async ({ folder, sessionId }) => {
      const refusal = sessionId === undefined ? undefined : this.#slots.refusal(sessionId);
      if (refusal !== undefined) {
        // A write of it failed and could not be undone: its files may show bytes the disk never
        // got, so they are not read; it is reported (recover(): damaged) until the store reopens.
        const { file, message } = refusal;
        this.#addFinding({ sessionId, kind: 'unreadable', file, line: undefined, message });
        return undefined;
      }
      const known = fromMemory(sessionId);
      if (known !== undefined) return known;
      const tail = await this.#readTail(folder, sessionId);
      return tail === undefined ? undefined : (fromMemory(tail.sessionId) ?? tail);
    });
    return found
      .filter((session) => session !== undefined)
      .sort((left, right) =>
        left.sessionId < right.sessionId ? -1 : left.sessionId > right.sessionId ? 1 : 0,
      );
  }

  /** A session's tail, or `undefined` (reported in `findings()`) when it cannot be read. */
  async #readTail(folder: string, sessionId: string | undefined) {
    try {
      return await readTail({ fs: this.#fs, folder, sessionId });
    } catch (cause) {
      // A folder a purge took away while it was read is a session that is gone, not damage.
      if (!(await folderExists(this.#fs, folder))) return undefined;
      this.#addFinding(findingOf(unreadable(cause, folder), sessionId, folder));
      return undefined;
    }
  }

  #addFinding(finding: StoreFinding): void {
    const key = JSON.stringify([
      finding.kind,
      finding.sessionId,
      finding.file,
      finding.line,
      finding.message,
    ]);
    if (!this.#findings.has(key)) this.#findings.set(key, finding);
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
