import path from 'node:path';
import type { Fact, NewFact, PartialSnapshot } from '../../events/facts.ts';
import { defaultPartialChars } from '../bound-partial.ts';
import {
  type AppendOptions,
  type AppendResult,
  type EventStore,
  type OpenRun,
  StoreClosedError,
  type StoreFinding,
} from '../event-store.ts';
import { FactListeners } from '../fact-listeners.ts';
import { cloneJson } from '../plain-json.ts';
import { checkFromSeq, checkSessionId } from '../session-log.ts';
import { GroupCommit, type SessionSlot, type SessionState } from './group-commit.ts';
import { checkOptions, type LowdbStoreOptions } from './lowdb-store-options.ts';
import { openStoreFolder } from './open-store-folder.ts';
import { PartialFiles } from './partial-files.ts';
import { readTail } from './read-tail.ts';
import { isSessionFolderName, mapLimit, sessionIdOfFolder } from './session-files.ts';
import { findingOf, SessionSlots, unreadable } from './session-slots.ts';
import { nodeStoreFs, type StoreFs } from './store-fs.ts';
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
export function lowdbStore(options: LowdbStoreOptions): EventStore {
  return new LowdbStore(options);
}

class LowdbStore implements EventStore {
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
  #closed = false;
  #closing: Promise<void> | undefined;

  constructor(options: LowdbStoreOptions) {
    checkOptions(options);
    const segmentSize = options.segmentSize ?? 256;
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
    return this.#track(this.#slots.use(sessionId, work));
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
    const folders = await this.#folders();
    // After a reopen this reads one record and one tail segment per session, never whole ones.
    const found = await mapLimit(folders, 16, async ({ folder, sessionId }) => {
      const loaded = sessionId === undefined ? undefined : this.#slots.loaded(sessionId);
      if (loaded !== undefined && sessionId !== undefined) {
        return { sessionId, openRuns: [...loaded.durableOpenRuns.values()] };
      }
      const tail = await this.#readTail(folder, sessionId);
      const now = tail === undefined ? undefined : this.#slots.loaded(tail.sessionId);
      return tail && now
        ? { sessionId: tail.sessionId, openRuns: [...now.durableOpenRuns.values()] }
        : tail;
    });
    return found
      .filter((session) => session !== undefined)
      .sort((left, right) =>
        left.sessionId < right.sessionId ? -1 : left.sessionId > right.sessionId ? 1 : 0,
      )
      .flatMap(({ openRuns }) => openRuns.map((run) => ({ ...run })));
  }

  /** A session's tail, or `undefined` (reported in `findings()`) when it cannot be read. */
  async #readTail(folder: string, sessionId: string | undefined) {
    try {
      return await readTail({ fs: this.#fs, folder, sessionId });
    } catch (cause) {
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
