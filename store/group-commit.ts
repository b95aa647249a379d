import { mkdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { Low } from 'lowdb';
import type { Fact } from '../events/facts.ts';
import { syncFolder } from './durable-file-adapter.ts';
import { type OpenRun, StoreWriteError } from './event-store.ts';
import {
  openRunsSummary,
  type SegmentAdapterFactory,
  type SegmentDocument,
  type SegmentExtent,
  segmentFileName,
  segmentFormat,
} from './session-files.ts';
import { type SessionLog, trackOpenRun } from './session-log.ts';

/** A session `lowdbStore` knows of: its folder, and its state once loaded. */
export interface SessionSlot {
  sessionId: string;
  folder: string;
  /** `undefined` while the session is loading. */
  loaded: SessionState | undefined;
  /** Work queued while loading, run in call order once loaded (or failed with the load). */
  queued: { run: (state: SessionState) => void; fail: (error: unknown) => void }[];
}

/** A loaded session: every accepted fact in `log`, and how much of it is durable. */
export interface SessionState {
  log: SessionLog;
  /** False until the session's folder exists. */
  onDisk: boolean;
  /** The durable segments, in order. */
  segments: SegmentExtent[];
  /** Facts through this `seq` are on disk (reads and subscribers see only these). */
  durableSeq: number;
  /** Runs open after `durableSeq`. */
  durableOpenRuns: Map<string, OpenRun>;
  /** Appends waiting for their facts to be durable. */
  waiters: { seq: number; resolve: () => void; reject: (error: unknown) => void }[];
}

let stagingCounter = 0;

/**
 * The write path of `lowdbStore`. Appends only mark their session dirty; one commit, started
 * with `setImmediate`, writes every dirty session — one write per touched segment, however many
 * appends touched it — and then resolves every append it covered. Appends that arrive while a
 * commit is writing go out together in the next one.
 */
export class GroupCommit {
  readonly #sessionsDir: string;
  readonly #segmentSize: number;
  readonly #createAdapter: SegmentAdapterFactory;
  readonly #publish: (sessionId: string, facts: readonly Fact[]) => void;
  readonly #forget: (slot: SessionSlot) => void;
  readonly #dirty = new Set<SessionSlot>();
  #running: Promise<void> | undefined;
  #scheduled = false;

  constructor(options: {
    sessionsDir: string;
    segmentSize: number;
    createAdapter: SegmentAdapterFactory;
    /** Called with facts once they are durable, in `seq` order. */
    publish: (sessionId: string, facts: readonly Fact[]) => void;
    /** Called when a write failed: the store must drop the slot and reload it from disk. */
    forget: (slot: SessionSlot) => void;
  }) {
    this.#sessionsDir = options.sessionsDir;
    this.#segmentSize = options.segmentSize;
    this.#createAdapter = options.createAdapter;
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

  /** Stops tracking a slot the store dropped. */
  discard(slot: SessionSlot): void {
    this.#dirty.delete(slot);
  }

  /** Resolves when no commit is running or due. */
  async idle(): Promise<void> {
    while (this.#running !== undefined || this.#scheduled || this.#dirty.size > 0) {
      await (this.#running ?? new Promise((resolve) => setImmediate(resolve)));
    }
  }

  #schedule(): void {
    if (this.#scheduled || this.#running !== undefined) return;
    this.#scheduled = true;
    // setImmediate gathers every append of this tick (and their microtasks) into one commit.
    setImmediate(() => {
      this.#scheduled = false;
      this.#running = this.#commit().finally(() => {
        this.#running = undefined;
        if (this.#dirty.size > 0) this.#schedule();
      });
    });
  }

  async #commit(): Promise<void> {
    while (this.#dirty.size > 0) {
      const batch = [...this.#dirty];
      this.#dirty.clear();
      await Promise.all(batch.map((slot) => this.#writeSession(slot)));
    }
  }

  async #writeSession(slot: SessionSlot): Promise<void> {
    const state = slot.loaded;
    if (state === undefined) return;
    const { segments, durableSeq } = state;
    const extents = planSegments(segments, durableSeq, state.log.lastSeq, this.#segmentSize);
    const openRuns = new Map(state.durableOpenRuns);
    let file: string | undefined;
    try {
      // Segments go out one after another: a crash between two leaves a prefix, never a gap.
      for (const extent of extents) {
        const lastSeq = extent.firstSeq + extent.count - 1;
        for (const fact of state.log.slice(state.durableSeq + 1, lastSeq)) {
          trackOpenRun(openRuns, fact);
        }
        const document: SegmentDocument = {
          format: segmentFormat,
          sessionId: slot.sessionId,
          segment: extent.index,
          openRuns: openRunsSummary(openRuns),
          facts: state.log.slice(extent.firstSeq, lastSeq),
        };
        file = path.join(slot.folder, segmentFileName(extent.index));
        await this.#writeSegment(slot, state, document);
        if (state.segments.at(-1)?.index === extent.index) state.segments.pop();
        state.segments.push(extent);
        this.#markDurable(slot, state, lastSeq, openRuns);
      }
    } catch (error) {
      this.#fail(slot, state, error, file);
    }
  }

  async #writeSegment(slot: SessionSlot, state: SessionState, document: SegmentDocument) {
    const name = segmentFileName(document.segment);
    if (state.onDisk) {
      await new Low(this.#createAdapter(path.join(slot.folder, name)), document).write();
      return;
    }
    // A new session appears whole: its folder is renamed into place with its first segment.
    stagingCounter += 1;
    const staging = path.join(this.#sessionsDir, `.new-${process.pid}-${stagingCounter}`);
    await mkdir(staging);
    try {
      await new Low(this.#createAdapter(path.join(staging, name)), document).write();
      await rename(staging, slot.folder);
    } catch (error) {
      await rm(staging, { recursive: true, force: true });
      throw error;
    }
    await syncFolder(this.#sessionsDir);
    state.onDisk = true;
  }

  #markDurable(
    slot: SessionSlot,
    state: SessionState,
    seq: number,
    openRuns: Map<string, OpenRun>,
  ): void {
    const published = state.log.slice(state.durableSeq + 1, seq);
    state.durableSeq = seq;
    state.durableOpenRuns = new Map(openRuns);
    const ready = state.waiters.filter((waiter) => waiter.seq <= seq);
    state.waiters = state.waiters.filter((waiter) => waiter.seq > seq);
    for (const waiter of ready) waiter.resolve();
    this.#publish(slot.sessionId, published);
  }

  #fail(slot: SessionSlot, state: SessionState, error: unknown, file: string | undefined): void {
    // The disk holds the old segment or the new one: drop the slot so the session is reloaded
    // from disk on next use, and memory never runs ahead of what is stored.
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

/** The segments a commit rewrites or creates: fill the tail, then start new ones. */
export function planSegments(
  segments: readonly SegmentExtent[],
  durableSeq: number,
  target: number,
  segmentSize: number,
): SegmentExtent[] {
  const extents: SegmentExtent[] = [];
  let next = durableSeq + 1;
  const tail = segments.at(-1);
  if (tail !== undefined && tail.count < segmentSize && next <= target) {
    const count = Math.min(segmentSize, tail.count + target - durableSeq);
    extents.push({ index: tail.index, firstSeq: tail.firstSeq, count });
    next = tail.firstSeq + count;
  }
  let index = (tail?.index ?? -1) + 1;
  while (next <= target) {
    const count = Math.min(segmentSize, target - next + 1);
    extents.push({ index, firstSeq: next, count });
    index += 1;
    next += count;
  }
  return extents;
}
