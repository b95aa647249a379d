import path from 'node:path';
import { Low } from 'lowdb';
import type { Fact } from '../../events/facts.ts';
import type { OpenRun, StoreFinding } from '../event-store.ts';
import { SessionLog, storedFactProblem, trackOpenRun } from '../session-log.ts';
import {
  checkLegacySegment,
  type LegacySegmentDocument,
  legacyCorruption,
  readLegacySegment,
} from './legacy-segments.ts';
import {
  corruptLine,
  type SegmentFile,
  SegmentFileAdapter,
  type SegmentHeader,
} from './segment-file-adapter.ts';
import {
  listSessionFolder,
  mapLimit,
  type SegmentName,
  type SessionListing,
  sessionRecordName,
} from './session-files.ts';
import {
  checkListing,
  checkRecordEntry,
  readSessionRecord,
  recordOf,
  type SegmentEntry,
  type SessionRecord,
  writeSessionRecord,
} from './session-record.ts';
import { type StoreFs, syncFolder } from './store-fs.ts';

/** A session read from its folder. */
export interface LoadedSession {
  log: SessionLog;
  segments: SegmentEntry[];
  /** The append-only tail segment, held by lowdb (`undefined`: none yet, or a 0.1.0 tail). */
  tail: Low<SegmentFile> | undefined;
  openRuns: Map<string, OpenRun>;
  /** False when the session has no folder yet (no fact was ever stored). */
  onDisk: boolean;
  /** What loading cut: an unacknowledged torn tail. */
  findings: StoreFinding[];
}

type ReadSegment =
  | (SegmentName & { format: 'json'; file: string; document: LegacySegmentDocument })
  | (SegmentName & {
      format: 'jsonl';
      file: string;
      adapter: SegmentFileAdapter;
      data: SegmentFile | null;
    });

/**
 * Reads a whole session from its folder and checks it: every segment the record lists present,
 * none missing in between, every line valid, facts of this session with `seq` 1, 2, 3, … across
 * segments, each header's open-runs summary matching the facts before it, each segment matching
 * its record entry. Any problem throws `StoreCorruptionError` naming the file (and line) — a
 * session is never returned shortened. Only then does it finish what a crash interrupted: a torn
 * last line is cut (and reported in `findings`), a segment created but never acknowledged is
 * removed, and a record one segment behind is rewritten.
 */
export async function loadSession(options: {
  fs: StoreFs;
  folder: string;
  sessionId: string;
}): Promise<LoadedSession> {
  const load = new SessionLoad(options);
  const listing = await listSessionFolder(options.fs, options.folder, { removeTemps: true });
  if (listing === undefined) return load.loaded({ onDisk: false });
  await load.restoreSegments(listing);
  // The session is valid: finish what a crash interrupted, and say so.
  await load.finishInterrupted();
  return load.loaded({ onDisk: true });
}

/** One load of a session: what is restored so far, segment by segment, and what it found. */
class SessionLoad {
  readonly #fs: StoreFs;
  readonly #folder: string;
  readonly #sessionId: string;
  readonly #log: SessionLog;
  readonly #openRuns = new Map<string, OpenRun>();
  readonly #segments: SegmentEntry[] = [];
  readonly #findings: StoreFinding[] = [];
  #tail: Low<SegmentFile> | undefined;
  #record: SessionRecord | undefined;
  /** The newest segment when the record does not list it yet (a crash after creating it). */
  #unlisted: SegmentName | undefined;
  /** That segment when it holds no complete fact: its creation was cut short. */
  #unacknowledged: ReadSegment | undefined;

  constructor(options: { fs: StoreFs; folder: string; sessionId: string }) {
    this.#fs = options.fs;
    this.#folder = options.folder;
    this.#sessionId = options.sessionId;
    this.#log = new SessionLog({ sessionId: options.sessionId, storeName: 'lowdbStore' });
  }

  /** Checks the folder against its record, then reads and restores every segment in order. */
  async restoreSegments(listing: SessionListing): Promise<void> {
    const fs = this.#fs;
    const folder = this.#folder;
    this.#record = listing.hasRecord ? await readSessionRecord(fs, folder) : undefined;
    this.#unlisted = checkListing(listing, this.#record, { folder, sessionId: this.#sessionId });
    const files = await mapLimit(listing.segments, 8, (segment) =>
      readSegment(fs, folder, segment),
    );
    for (const [position, segment] of files.entries()) {
      const restored = this.#restoreSegment(segment, {
        position,
        last: position === files.length - 1,
      });
      if (!restored) break;
    }
  }

  /** Cuts a torn tail, removes an unacknowledged segment or rewrites a record one behind. */
  async finishInterrupted(): Promise<void> {
    await this.#cutTornTail();
    if (this.#unacknowledged !== undefined) {
      await this.#removeUnacknowledged(this.#unacknowledged.file);
    } else if (this.#unlisted !== undefined) {
      // The record is one segment behind (a crash right after that segment was created).
      await writeSessionRecord(
        this.#fs,
        this.#folder,
        recordOf(this.#sessionId, this.#segments, this.#log),
      );
    }
  }

  /** The session as loaded (`onDisk: false`: it has no folder yet). */
  loaded(options: { onDisk: boolean }): LoadedSession {
    return {
      log: this.#log,
      segments: this.#segments,
      tail: this.#tail,
      openRuns: this.#openRuns,
      onDisk: options.onDisk,
      findings: this.#findings,
    };
  }

  /** Restores one segment's facts after checking it; false for an unacknowledged last one. */
  #restoreSegment(segment: ReadSegment, at: { position: number; last: boolean }): boolean {
    const firstSeq = this.#log.lastSeq + 1;
    const before = summary(this.#openRuns);
    let facts: Fact[];
    if (segment.format === 'json') {
      facts = this.#restoreLegacy(segment, firstSeq);
    } else {
      const restored = this.#restoreAppendOnly(segment, { firstSeq, before, last: at.last });
      if (restored === undefined) return false;
      facts = restored;
    }
    const openRuns = segment.format === 'jsonl' ? before : undefined;
    const entry = this.#record?.segments[at.position];
    if (entry !== undefined) {
      checkRecordEntry(
        entry,
        {
          file: segment.file,
          firstSeq,
          firstId: facts[0]?.id,
          lastSeq: this.#log.lastSeq,
          lastId: facts.at(-1)?.id,
          openRuns,
        },
        path.join(this.#folder, sessionRecordName),
      );
    }
    this.#segments.push({
      index: segment.index,
      format: segment.format,
      firstSeq,
      count: facts.length,
      openRuns,
    });
    return true;
  }

  /** A 0.1.0 segment: checked as 0.1.0 did, its summary against the facts restored so far. */
  #restoreLegacy(segment: ReadSegment & { format: 'json' }, firstSeq: number): Fact[] {
    const facts = checkLegacySegment(segment.document, {
      ...segment,
      sessionId: this.#sessionId,
      firstSeq,
    });
    for (const fact of facts) this.#restoreFact(fact, segment.file, undefined);
    this.#tail = undefined;
    if (JSON.stringify(summary(this.#openRuns)) !== JSON.stringify(segment.document.openRuns)) {
      throw legacyCorruption(
        segment.file,
        'its openRuns summary does not match the facts of the session',
      );
    }
    return facts;
  }

  /**
   * An append-only segment: its header, then each fact with the next seq. `undefined` for the
   * last segment when it holds no complete fact and the record does not list it yet.
   */
  #restoreAppendOnly(
    segment: ReadSegment & { format: 'jsonl' },
    at: { firstSeq: number; before: SegmentHeader['openRuns']; last: boolean },
  ): Fact[] | undefined {
    const { adapter, data } = segment;
    if (adapter.torn !== undefined && !at.last) {
      throw corruptLine(
        segment.file,
        adapter.torn.line,
        'it is cut short, yet a later segment exists',
      );
    }
    if (data === null || data.facts.length === 0) {
      // Created with its first facts in one write that a crash cut short: never acknowledged.
      if (at.last && segment.name === this.#unlisted?.name) {
        this.#unacknowledged = segment;
        return undefined;
      }
      throw corruptLine(segment.file, data === null ? 1 : 2, 'it holds no complete fact');
    }
    const { firstSeq, before } = at;
    checkHeader(data.header, {
      file: segment.file,
      sessionId: this.#sessionId,
      index: segment.index,
      firstSeq,
      before,
    });
    data.facts.forEach((fact, offset) => {
      const line = offset + 2;
      const problem = storedFactProblem(fact, {
        sessionId: this.#sessionId,
        seq: firstSeq + offset,
      });
      if (problem !== undefined) throw corruptLine(segment.file, line, problem);
      this.#restoreFact(fact, segment.file, line);
    });
    this.#tail = new Low(adapter, data);
    return data.facts;
  }

  #restoreFact(fact: Fact, file: string, line: number | undefined): void {
    // The shared rules refuse a stored fact (a repeated id, one after its run ended): name where.
    const problem = this.#log.restore(fact);
    if (problem !== undefined) {
      throw line === undefined ? legacyCorruption(file, problem) : corruptLine(file, line, problem);
    }
    trackOpenRun(this.#openRuns, fact);
  }

  async #cutTornTail(): Promise<void> {
    const adapter = this.#tail?.adapter as SegmentFileAdapter | undefined;
    const torn = adapter?.torn;
    if (adapter === undefined || torn === undefined) return;
    await adapter.cut();
    this.#findings.push({
      sessionId: this.#sessionId,
      kind: 'torn-tail-cut',
      file: adapter.file,
      line: torn.line,
      message: `lowdbStore: ${adapter.file} ended with ${torn.bytes} bytes of an unfinished line ${torn.line}, a write a crash cut short before it was acknowledged; they were removed and nothing acknowledged was lost`,
    });
  }

  async #removeUnacknowledged(file: string): Promise<void> {
    await this.#fs.unlink(file);
    await syncFolder(this.#fs, this.#folder);
    this.#findings.push({
      sessionId: this.#sessionId,
      kind: 'torn-tail-cut',
      file,
      line: 1,
      message: `lowdbStore: ${file} was being created when a crash stopped the store, before any of its facts was acknowledged; it was removed and nothing acknowledged was lost`,
    });
  }
}

/** The open runs in a header's form: `{ turnId, runId }` in the order they started. */
export function summary(openRuns: Map<string, OpenRun>): SegmentHeader['openRuns'] {
  return [...openRuns.values()].map(({ turnId, runId }) => ({ turnId, runId }));
}

/** Checks a header's values against the session and the segments before it. */
export function checkHeader(
  header: SegmentHeader,
  expected: {
    file: string;
    sessionId: string;
    index: number;
    firstSeq: number;
    before: SegmentHeader['openRuns'] | undefined;
  },
): void {
  const problem =
    header.sessionId !== expected.sessionId
      ? `it belongs to session ${header.sessionId}, not ${expected.sessionId}`
      : header.segment !== expected.index
        ? `it says it is segment ${header.segment}`
        : header.firstSeq !== expected.firstSeq
          ? `it starts at seq ${header.firstSeq} where seq ${expected.firstSeq} belongs`
          : expected.before !== undefined &&
              JSON.stringify(header.openRuns) !== JSON.stringify(expected.before)
            ? 'its openRuns summary does not match the facts before it'
            : undefined;
  if (problem !== undefined) throw corruptLine(expected.file, 1, problem);
}

async function readSegment(
  fs: StoreFs,
  folder: string,
  segment: SegmentName,
): Promise<ReadSegment> {
  const file = path.join(folder, segment.name);
  if (segment.format === 'json') {
    return { ...segment, format: 'json', file, document: await readLegacySegment(fs, file) };
  }
  const adapter = new SegmentFileAdapter(file, { fs });
  return { ...segment, format: 'jsonl', file, adapter, data: await adapter.read() };
}
