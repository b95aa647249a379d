import path from 'node:path';
import { Low } from 'lowdb';
import type { Fact } from '../../events/facts.ts';
import { type OpenRun, StoreWriteError } from '../event-store.ts';
import { type SessionLog, trackOpenRun } from '../session-log.ts';
import { summary } from './load-session.ts';
import {
  type SegmentFile,
  SegmentFileAdapter,
  type SegmentHeader,
  segmentFormat,
} from './segment-file-adapter.ts';
import { segmentFileName } from './session-files.ts';
import {
  recordOf,
  type SegmentEntry,
  type SessionRecord,
  writeSessionRecord,
} from './session-record.ts';
import { type StoreFs, syncFolder } from './store-fs.ts';

/** A session `lowdbStore` knows of: its folder, and its state once loaded. */
export interface SessionSlot {
  sessionId: string;
  folder: string;
  /** `undefined` while the session is loading. */
  loaded: SessionState | undefined;
  /** Work queued while loading, run in call order once loaded (or failed with the load). */
  queued: { run: (state: SessionState) => void; fail: (error: unknown) => void }[];
  /** Operations started on the slot and not settled yet: a busy slot is never evicted. */
  busy: number;
}

/** A loaded session: every accepted fact in `log`, and how much of it is durable. */
export interface SessionState {
  log: SessionLog;
  /** False until the session's folder exists. */
  onDisk: boolean;
  /** The durable segments, in order. */
  segments: SegmentEntry[];
  /** The append-only tail segment (`undefined`: none yet, or a 0.1.0 tail, never appended to). */
  tail: Low<SegmentFile> | undefined;
  /** Facts through this `seq` are on disk (reads and subscribers see only these). */
  durableSeq: number;
  /** Runs open after `durableSeq`. */
  durableOpenRuns: Map<string, OpenRun>;
  /** Appends waiting for their facts to be durable. */
  waiters: { seq: number; resolve: () => void; reject: (error: unknown) => void }[];
}

let stagingCounter = 0;

/**
 * The write path of `lowdbStore`. Appends only mark their session dirty; on `setImmediate`,
 * every dirty session is written, sessions concurrently — one append (one write, one
 * `fdatasync`) to its tail segment however many appends and facts it covers, or a new segment
 * when the tail is full — and every append it covered resolves. Appends to a session whose write
 * is in flight go out together in its next write, which starts as soon as that one is done; a
 * slow session never holds up the others.
 */
export class GroupCommit {
  readonly #fs: StoreFs;
  readonly #sessionsDir: string;
  readonly #segmentSize: number;
  readonly #publish: (sessionId: string, facts: readonly Fact[]) => void;
  readonly #forget: (slot: SessionSlot, refusal: StoreWriteError | undefined) => void;
  readonly #dirty = new Set<SessionSlot>();
  readonly #writing = new Set<SessionSlot>();
  readonly #running = new Set<Promise<void>>();
  #scheduled = false;

  constructor(options: {
    fs: StoreFs;
    sessionsDir: string;
    segmentSize: number;
    /** Called with facts once they are durable, in `seq` order. */
    publish: (sessionId: string, facts: readonly Fact[]) => void;
    /**
     * Called when a write failed: the store must drop the slot and reload it from disk, or, given
     * an error (the write could not be undone), refuse the session with it until it is reopened.
     */
    forget: (slot: SessionSlot, refusal: StoreWriteError | undefined) => void;
  }) {
    this.#fs = options.fs;
    this.#sessionsDir = options.sessionsDir;
    this.#segmentSize = options.segmentSize;
    this.#publish = options.publish;
    this.#forget = options.forget;
  }

  /** Resolves once the slot's facts through `seq` are durable (rejects with `StoreWriteError`). */
  durable(slot: SessionSlot, state: SessionState, seq: number): Promise<void> {
    if (seq <= state.durableSeq) return Promise.resolve();
    return new Promise((resolve, reject) => {
      state.waiters.push({ seq, resolve, reject });
      this.#dirty.add(slot);
      this.#schedule();
    });
  }

  /** True while the slot has facts to write or being written. */
  pending(slot: SessionSlot): boolean {
    return this.#dirty.has(slot) || this.#writing.has(slot);
  }

  /** Stops tracking a slot the store dropped. */
  discard(slot: SessionSlot): void {
    this.#dirty.delete(slot);
  }

  /** Resolves when no write is running or due. */
  async idle(): Promise<void> {
    while (this.#running.size > 0 || this.#scheduled || this.#dirty.size > 0) {
      await (this.#running.size > 0
        ? Promise.all(this.#running)
        : new Promise((resolve) => setImmediate(resolve)));
    }
  }

  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    // setImmediate gathers every append of this tick (and their microtasks) into one write per
    // session; a session whose write is in flight goes again as soon as that write is done.
    setImmediate(() => {
      this.#scheduled = false;
      for (const slot of this.#dirty) {
        if (this.#writing.has(slot)) continue;
        this.#dirty.delete(slot);
        this.#start(slot);
      }
    });
  }

  #start(slot: SessionSlot): void {
    this.#writing.add(slot);
    const write: Promise<void> = this.#writeSession(slot).finally(() => {
      this.#writing.delete(slot);
      this.#running.delete(write);
      if (this.#dirty.has(slot)) this.#schedule();
    });
    this.#running.add(write);
  }

  async #writeSession(slot: SessionSlot): Promise<void> {
    const state = slot.loaded;
    if (state === undefined) return;
    const target = state.log.lastSeq;
    let file: string | undefined;
    try {
      // Segments go out one after another: a crash between two leaves a prefix, never a gap.
      while (state.durableSeq < target) {
        const tail = state.segments.at(-1);
        const room =
          state.tail === undefined || tail === undefined ? 0 : this.#segmentSize - tail.count;
        const through = Math.min(target, state.durableSeq + (room > 0 ? room : this.#segmentSize));
        const facts = state.log.slice(state.durableSeq + 1, through);
        if (room > 0 && state.tail !== undefined && tail !== undefined) {
          const adapter = state.tail.adapter as SegmentFileAdapter;
          const low = state.tail;
          file = adapter.file;
          low.data.facts.push(...facts);
          // Appends only these facts, then fdatasync; a failure cuts the file back first.
          await undoable(
            () => low.write(),
            () => adapter.undo(),
          );
          tail.count += facts.length;
        } else {
          file = path.join(slot.folder, segmentFileName(this.#nextIndex(state), 'jsonl'));
          await this.#createSegment(slot, state, facts);
        }
        this.#markDurable(slot, state, through);
      }
    } catch (error) {
      this.#fail(slot, state, error, file);
    }
  }

  #nextIndex(state: SessionState): number {
    return (state.segments.at(-1)?.index ?? -1) + 1;
  }

  /**
   * Starts a segment with `facts`: created and fsynced, its folder entry fsynced, and only then
   * the record rewritten to list it — so a record never names a segment that a crash could take
   * back, and the facts are acknowledged only once the record lists their segment.
   */
  async #createSegment(slot: SessionSlot, state: SessionState, facts: Fact[]): Promise<void> {
    const index = this.#nextIndex(state);
    const name = segmentFileName(index, 'jsonl');
    const openRuns = summary(state.durableOpenRuns);
    const header: SegmentHeader = {
      format: segmentFormat,
      sessionId: slot.sessionId,
      segment: index,
      firstSeq: state.durableSeq + 1,
      openRuns,
    };
    const entry: SegmentEntry = {
      index,
      format: 'jsonl',
      firstSeq: header.firstSeq,
      count: facts.length,
      openRuns,
    };
    const record = recordOf(slot.sessionId, [...state.segments, entry], state.log);
    const data: SegmentFile = { header, facts: [...facts] };
    if (state.onDisk) {
      const adapter = new SegmentFileAdapter(path.join(slot.folder, name), { fs: this.#fs });
      const tail = new Low(adapter, data);
      await undoable(
        async () => {
          await tail.write();
          await syncFolder(this.#fs, slot.folder);
          await writeSessionRecord(this.#fs, slot.folder, record);
        },
        async () => {
          // The record as it was (its rename may be in the cache only), then no segment file.
          const before = recordOf(slot.sessionId, state.segments, state.log);
          await writeSessionRecord(this.#fs, slot.folder, before);
          await adapter.undo();
          await syncFolder(this.#fs, slot.folder);
        },
      );
      state.tail = tail;
    } else {
      state.tail = new Low(await this.#createSession(slot, name, data, record), data);
      state.onDisk = true;
    }
    state.segments.push(entry);
  }

  /**
   * A new session appears whole: its folder is renamed into place with its first segment and its
   * record (whose write fsyncs the staging folder, the segment's entry too), then the sessions
   * folder is fsynced. A failure removes what was made, the session's folder too.
   */
  async #createSession(
    slot: SessionSlot,
    name: string,
    data: SegmentFile,
    record: SessionRecord,
  ): Promise<SegmentFileAdapter> {
    stagingCounter += 1;
    const staging = path.join(this.#sessionsDir, `.new-${process.pid}-${stagingCounter}`);
    await this.#fs.mkdir(staging);
    const adapter = new SegmentFileAdapter(path.join(staging, name), { fs: this.#fs });
    try {
      await new Low(adapter, data).write();
      await writeSessionRecord(this.#fs, staging, record);
      await this.#fs.rename(staging, slot.folder);
    } catch (error) {
      // A staging folder left behind is removed when the store opens next.
      await this.#fs.removeFolder(staging).catch(() => {});
      throw error;
    }
    await undoable(
      () => syncFolder(this.#fs, this.#sessionsDir),
      async () => {
        // The rename may be in the cache only: the session had no folder before this write.
        await this.#fs.removeFolder(slot.folder);
        await syncFolder(this.#fs, this.#sessionsDir);
      },
    );
    return adapter.movedTo(path.join(slot.folder, name));
  }

  #markDurable(slot: SessionSlot, state: SessionState, seq: number): void {
    const published = state.log.slice(state.durableSeq + 1, seq);
    for (const fact of published) trackOpenRun(state.durableOpenRuns, fact);
    state.durableSeq = seq;
    const ready = state.waiters.filter((waiter) => waiter.seq <= seq);
    state.waiters = state.waiters.filter((waiter) => waiter.seq > seq);
    for (const waiter of ready) waiter.resolve();
    this.#publish(slot.sessionId, published);
  }

  #fail(slot: SessionSlot, state: SessionState, error: unknown, file: string | undefined): void {
    this.#dirty.delete(slot);
    const where = file ?? slot.folder;
    let failure: StoreWriteError;
    if (error instanceof WriteNotUndone) {
      // What is on disk is unknown and the cache may lie: the session takes no more calls.
      const reason = `${describe(error.cause)}; undoing it failed too: ${describe(error.undoError)}`;
      failure = new StoreWriteError({
        message: `lowdbStore: writing ${where} failed (${reason}); the appends waiting on it were not acknowledged, and session ${slot.sessionId} refuses every call until the store is closed and opened again: check the disk first`,
        sessionId: slot.sessionId,
        file,
        cause: error.cause,
      });
      this.#forget(slot, failure);
    } else {
      // The write was undone (the disk holds what was synced before it): drop the slot so the
      // session is reloaded from disk on next use, and memory never runs ahead of the disk.
      failure = new StoreWriteError({
        message: `lowdbStore: writing ${where} failed (${describe(error)}); the appends waiting on it were not acknowledged and not stored: retry them (with the same fact ids, a repeat of a stored fact is a no-op)`,
        sessionId: slot.sessionId,
        file,
        cause: error,
      });
      this.#forget(slot, undefined);
    }
    for (const waiter of state.waiters.splice(0)) waiter.reject(failure);
  }
}

/** A write that failed and whose undo failed too: the disk's state is unknown. */
class WriteNotUndone extends Error {
  readonly undoError: unknown;

  constructor(cause: unknown, undoError: unknown) {
    super('a failed write could not be undone', { cause });
    this.undoError = undoError;
  }
}

/**
 * Runs `write`; when it fails, runs `undo` (back to the last synced state) and rethrows the
 * write's error, or a `WriteNotUndone` when the undo failed too.
 */
async function undoable(write: () => Promise<void>, undo: () => Promise<void>): Promise<void> {
  try {
    await write();
  } catch (error) {
    try {
      await undo();
    } catch (undoError) {
      throw new WriteNotUndone(error, undoError);
    }
    throw error;
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
