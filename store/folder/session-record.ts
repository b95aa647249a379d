import path from 'node:path';
import { Low } from 'lowdb';
import { StoreCorruptionError } from '../event-store.ts';
import type { SessionLog } from '../session-log.ts';
import { DurableFileAdapter } from './durable-file-adapter.ts';
import {
  type SegmentFormat,
  type SegmentName,
  type SessionListing,
  segmentFileName,
  sessionRecordName,
} from './session-files.ts';
import type { StoreFs } from './store-fs.ts';

/** The `format` of a session record; a future layout gets a new tag. */
export const sessionRecordFormat = 'turnlog.session/1';

/**
 * A session's record (`session.json` in its folder), rewritten atomically each time the session
 * gets a new segment (and by a load that finds it one segment behind, after a crash): which
 * segments exist and where each starts (and, for all but the tail, ends). It is how a deleted,
 * moved or replaced segment is found, since a segment cannot testify to its own absence.
 */
export interface SessionRecord {
  format: typeof sessionRecordFormat;
  sessionId: string;
  /** Every segment, in order; the last one is the tail, still growing. */
  segments: RecordEntry[];
}

/** One segment in a session record. */
export interface RecordEntry {
  /** `000003.jsonl` (or `000002.json`, a 0.1.0 segment the session continued from). */
  file: string;
  firstSeq: number;
  firstId: string;
  /** The last fact's `seq` and `id`: set for every segment but the tail. */
  lastSeq?: number;
  lastId?: string;
  /** An append-only segment's header summary: the runs open before its first fact. */
  openRuns?: { turnId: string; runId: string }[];
}

/** What one segment held, to check against its record entry. */
export interface SegmentFacts {
  file: string;
  firstSeq: number;
  firstId: string | undefined;
  lastSeq: number;
  lastId: string | undefined;
  openRuns: { turnId: string; runId: string }[] | undefined;
}

/** Where one segment of a loaded session sits: its number, format, first `seq` and fact count. */
export interface SegmentEntry {
  index: number;
  format: SegmentFormat;
  firstSeq: number;
  count: number;
  /** An append-only segment's header summary (runs open before `firstSeq`). */
  openRuns: { turnId: string; runId: string }[] | undefined;
}

/** The record of a session whose segments are `segments` (the last one is the tail). */
export function recordOf(
  sessionId: string,
  segments: readonly SegmentEntry[],
  log: SessionLog,
): SessionRecord {
  const idAt = (seq: number) => log.slice(seq, seq)[0]?.id ?? '';
  return {
    format: sessionRecordFormat,
    sessionId,
    segments: segments.map((segment, position) => {
      const lastSeq = segment.firstSeq + segment.count - 1;
      const sealed = position < segments.length - 1;
      return {
        file: segmentFileName(segment.index, segment.format),
        firstSeq: segment.firstSeq,
        firstId: idAt(segment.firstSeq),
        ...(sealed ? { lastSeq, lastId: idAt(lastSeq) } : {}),
        ...(segment.openRuns === undefined ? {} : { openRuns: segment.openRuns }),
      };
    }),
  };
}

/** Reads a session's record; `undefined` when it has none (a 0.1.0 session, or a new folder). */
export async function readSessionRecord(
  fs: StoreFs,
  folder: string,
): Promise<SessionRecord | undefined> {
  const file = path.join(folder, sessionRecordName);
  const low = new Low<SessionRecord | null>(new DurableFileAdapter(file, { fs }), null);
  await low.read();
  if (low.data === null) return undefined;
  const problem = recordProblem(low.data);
  if (problem !== undefined) throw recordCorruption(file, problem);
  return low.data;
}

/** Replaces a session's record atomically (temp file, fsync, rename, fsync of the folder). */
export async function writeSessionRecord(
  fs: StoreFs,
  folder: string,
  record: SessionRecord,
): Promise<void> {
  const adapter = new DurableFileAdapter<SessionRecord>(path.join(folder, sessionRecordName), {
    fs,
  });
  await new Low(adapter, record).write();
}

/**
 * Checks a session folder's files against its record (or, without one, against what 0.1.0 and a
 * crash can leave) and returns the segment the record does not list yet, if any: the newest
 * one, when a crash fell between creating it and rewriting the record. Throws
 * `StoreCorruptionError` naming the first file missing, out of place or unlisted.
 */
export function checkListing(
  listing: SessionListing,
  record: SessionRecord | undefined,
  options: { folder: string; sessionId: string | undefined },
): SegmentName | undefined {
  const { folder } = options;
  const recordFile = path.join(folder, sessionRecordName);
  const { segments } = listing;
  if (record !== undefined) {
    if (options.sessionId !== undefined && record.sessionId !== options.sessionId) {
      throw recordCorruption(recordFile, `it belongs to session ${record.sessionId}`);
    }
    const names = new Set(segments.map((segment) => segment.name));
    record.segments.forEach((entry, position) => {
      if (names.has(entry.file)) return;
      const file = path.join(folder, entry.file);
      throw new StoreCorruptionError({
        message: `lowdbStore: ${file} is missing: ${recordFile} lists it as segment ${position} of session ${record.sessionId} (facts from seq ${entry.firstSeq}); it was deleted or moved: restore it from a backup`,
        file,
      });
    });
  }
  segments.forEach((segment, position) => {
    if (segment.index === position) return;
    const previous = segments[position - 1];
    if (previous?.index === segment.index) {
      throw corruptFolder(
        folder,
        `${previous.name} and ${segment.name} are both segment ${segment.index}`,
      );
    }
    const missing = path.join(folder, segmentFileName(position, segment.format));
    throw new StoreCorruptionError({
      message: `lowdbStore: ${missing} is missing but later segments of the session in ${folder} exist; restore it from a backup, or move the later segments away to keep the session up to that point`,
      file: missing,
    });
  });
  const firstNew = segments.findIndex((segment) => segment.format === 'jsonl');
  const legacyAfterNew = segments.find(
    (segment, position) => segment.format === 'json' && firstNew !== -1 && position > firstNew,
  );
  if (legacyAfterNew !== undefined) {
    throw corruptFolder(folder, `${legacyAfterNew.name} (a 0.1.0 segment) follows a newer one`);
  }
  if (record === undefined) {
    if (segments.length === 0) {
      throw corruptFolder(
        folder,
        'it holds no segment and no session record: its files were deleted',
      );
    }
    if (firstNew === -1) return undefined; // a 0.1.0 session
    // A 0.1.0 session continued in a new segment, stopped before its first record was written.
    if (firstNew > 0 && firstNew === segments.length - 1) return segments[firstNew];
    throw recordCorruption(
      recordFile,
      'it is missing (deleted?) but the session has newer segments',
    );
  }
  record.segments.forEach((entry, position) => {
    if (segments[position]?.name !== entry.file) {
      throw recordCorruption(recordFile, `it lists ${entry.file} as segment ${position}`);
    }
  });
  const unlisted = segments.slice(record.segments.length);
  const extra = unlisted[0];
  if (extra === undefined) return undefined;
  if (unlisted.length > 1 || extra.format !== 'jsonl') {
    const file = path.join(folder, (unlisted.at(-1) ?? extra).name);
    throw new StoreCorruptionError({
      message: `lowdbStore: ${file} is not listed in ${recordFile}: it does not belong to this session (or the record was replaced by an older one); move it away or restore the record from a backup`,
      file,
    });
  }
  return extra;
}

/** Checks one segment against its record entry; throws `StoreCorruptionError` naming the file. */
export function checkRecordEntry(entry: RecordEntry, found: SegmentFacts, recordFile: string) {
  const mismatch = (what: string) =>
    new StoreCorruptionError({
      message: `lowdbStore: ${found.file} does not match ${recordFile}: ${what}; the segment was replaced or edited: restore it from a backup`,
      file: found.file,
    });
  if (found.firstSeq !== entry.firstSeq || found.firstId !== entry.firstId) {
    throw mismatch(
      `it starts with ${found.firstId ?? 'no fact'} at seq ${found.firstSeq}, the record says ${entry.firstId} at seq ${entry.firstSeq}`,
    );
  }
  if (
    entry.lastSeq !== undefined &&
    (found.lastSeq !== entry.lastSeq || found.lastId !== entry.lastId)
  ) {
    throw mismatch(
      `it ends with ${found.lastId ?? 'no fact'} at seq ${found.lastSeq}, the record says ${entry.lastId} at seq ${entry.lastSeq}`,
    );
  }
  if (
    entry.openRuns !== undefined &&
    JSON.stringify(found.openRuns) !== JSON.stringify(entry.openRuns)
  ) {
    throw mismatch('its header lists other open runs than the record');
  }
}

function recordProblem(value: unknown): string | undefined {
  const record = value as Partial<SessionRecord> | null;
  if (typeof record !== 'object' || record === null || record.format !== sessionRecordFormat) {
    return `it is not a ${sessionRecordFormat} document`;
  }
  if (typeof record.sessionId !== 'string') return 'it has no sessionId';
  if (!Array.isArray(record.segments) || record.segments.length === 0) {
    return 'it lists no segments';
  }
  const bad = record.segments.findIndex(
    (entry: Partial<RecordEntry> | null) =>
      typeof entry?.file !== 'string' ||
      !/^\d{6,}\.jsonl?$/.test(entry.file) ||
      !Number.isInteger(entry.firstSeq) ||
      typeof entry.firstId !== 'string',
  );
  return bad === -1 ? undefined : `its segment entry ${bad} is not valid`;
}

function recordCorruption(file: string, problem: string): StoreCorruptionError {
  return new StoreCorruptionError({
    message: `lowdbStore: ${file} is not a valid session record: ${problem}; restore it from a backup or move the session folder away`,
    file,
  });
}

function corruptFolder(folder: string, problem: string): StoreCorruptionError {
  return new StoreCorruptionError({
    message: `lowdbStore: the session folder ${folder} is not valid: ${problem}; restore it from a backup or move it away`,
    file: folder,
  });
}
