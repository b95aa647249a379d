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
import { recordOf, type SegmentEntry, writeSessionRecord } from './session-record.ts';
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
  readonly #forget: (slot: SessionSlot) => void;
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
    /** Called when a write failed: the store must drop the slot and reload it from disk. */
    forget: (slot: SessionSlot) => void;
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
          file = (state.tail.adapter as SegmentFileAdapter).file;
          state.tail.data.facts.push(...facts);
          await state.tail.write(); // appends only these facts, then fdatasync
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
      const tail = new Low(
        new SegmentFileAdapter(path.join(slot.folder, name), { fs: this.#fs }),
        data,
      );
      await tail.write();
      await syncFolder(this.#fs, slot.folder);
      await writeSessionRecord(this.#fs, slot.folder, record);
      state.tail = tail;
    } else {
      // A new session appears whole: its folder is renamed into place with its first segment
      // and its record (whose write fsyncs the staging folder, the segment's entry too).
      stagingCounter += 1;
      const staging = path.join(this.#sessionsDir, `.new-${process.pid}-${stagingCounter}`);
      await this.#fs.mkdir(staging);
      try {
        await new Low(
          new SegmentFileAdapter(path.join(staging, name), { fs: this.#fs }),
          data,
        ).write();
        await writeSessionRecord(this.#fs, staging, record);
        await this.#fs.rename(staging, slot.folder);
      } catch (error) {
        await this.#fs.removeFolder(staging).catch(() => {});
        throw error;
      }
      await syncFolder(this.#fs, this.#sessionsDir);
      state.onDisk = true;
      const adapter = new SegmentFileAdapter(path.join(slot.folder, name), {
        fs: this.#fs,
        written: facts.length,
      });
      state.tail = new Low(adapter, data);
    }
    state.segments.push(entry);
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
    // The disk may hold part of the write: drop the slot so the session is reloaded from disk
    // on next use (a torn line is cut then), and memory never runs ahead of what is stored.
    this.#dirty.delete(slot);
    this.#forget(slot);
    const reason = error instanceof Error ? error.message : String(error);
    const failure = new StoreWriteError({
      message: `lowdbStore: writing ${file ?? slot.folder} failed (${reason}); the appends waiting on it were not acknowledged and may or may not be stored: read session ${slot.sessionId} and retry with the same fact ids (a repeat is a no-op)`,
      sessionId: slot.sessionId,
      file,
      cause: error,
    });
    for (const waiter of state.waiters.splice(0)) waiter.reject(failure);
  }
}
