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
  sessionRecordName,
} from './session-files.ts';
import {
  checkListing,
  checkRecordEntry,
  readSessionRecord,
  recordOf,
  type SegmentEntry,
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
  const { fs, folder, sessionId } = options;
  const log = new SessionLog({ sessionId, storeName: 'lowdbStore' });
  const openRuns = new Map<string, OpenRun>();
  const listing = await listSessionFolder(fs, folder, { removeTemps: true });
  if (listing === undefined) {
    return { log, segments: [], tail: undefined, openRuns, onDisk: false, findings: [] };
  }
  const record = listing.hasRecord ? await readSessionRecord(fs, folder) : undefined;
  const unlisted = checkListing(listing, record, { folder, sessionId });
  const files = await mapLimit(listing.segments, 8, (segment) => readSegment(fs, folder, segment));
  const segments: SegmentEntry[] = [];
  let tail: Low<SegmentFile> | undefined;
  let unacknowledged: ReadSegment | undefined;
  for (const [position, segment] of files.entries()) {
    const last = position === files.length - 1;
    const firstSeq = log.lastSeq + 1;
    const before = summary(openRuns);
    let facts: Fact[];
    if (segment.format === 'json') {
      facts = checkLegacySegment(segment.document, { ...segment, sessionId, firstSeq });
      for (const fact of facts) restore(log, openRuns, fact, segment.file, undefined);
      tail = undefined;
      if (JSON.stringify(summary(openRuns)) !== JSON.stringify(segment.document.openRuns)) {
        throw legacyCorruption(
          segment.file,
          'its openRuns summary does not match the facts of the session',
        );
      }
    } else {
      const { adapter, data } = segment;
      if (adapter.torn !== undefined && !last) {
        throw corruptLine(
          segment.file,
          adapter.torn.line,
          'it is cut short, yet a later segment exists',
        );
      }
      if (data === null || data.facts.length === 0) {
        // Created with its first facts in one write that a crash cut short: never acknowledged.
        if (last && segment.name === unlisted?.name) {
          unacknowledged = segment;
          break;
        }
        throw corruptLine(segment.file, data === null ? 1 : 2, 'it holds no complete fact');
      }
      checkHeader(data.header, {
        file: segment.file,
        sessionId,
        index: segment.index,
        firstSeq,
        before,
      });
      facts = data.facts;
      facts.forEach((fact, offset) => {
        const line = offset + 2;
        const problem = storedFactProblem(fact, { sessionId, seq: firstSeq + offset });
        if (problem !== undefined) throw corruptLine(segment.file, line, problem);
        restore(log, openRuns, fact, segment.file, line);
      });
      tail = new Low(adapter, data);
    }
    const entry = record?.segments[position];
    if (entry !== undefined) {
      checkRecordEntry(
        entry,
        {
          file: segment.file,
          firstSeq,
          firstId: facts[0]?.id,
          lastSeq: log.lastSeq,
          lastId: facts.at(-1)?.id,
          openRuns: segment.format === 'jsonl' ? before : undefined,
        },
        path.join(folder, sessionRecordName),
      );
    }
    segments.push({
      index: segment.index,
      format: segment.format,
      firstSeq,
      count: facts.length,
      openRuns: segment.format === 'jsonl' ? before : undefined,
    });
  }
  // The session is valid: finish what a crash interrupted, and say so.
  const findings: StoreFinding[] = [];
  const torn = tail === undefined ? undefined : (tail.adapter as SegmentFileAdapter).torn;
  if (tail !== undefined && torn !== undefined) {
    await (tail.adapter as SegmentFileAdapter).cut();
    findings.push({
      sessionId,
      kind: 'torn-tail-cut',
      file: (tail.adapter as SegmentFileAdapter).file,
      line: torn.line,
      message: `lowdbStore: ${(tail.adapter as SegmentFileAdapter).file} ended with ${torn.bytes} bytes of an unfinished line ${torn.line}, a write a crash cut short before it was acknowledged; they were removed and nothing acknowledged was lost`,
    });
  }
  if (unacknowledged !== undefined) {
    await fs.unlink(unacknowledged.file);
    await syncFolder(fs, folder);
    findings.push({
      sessionId,
      kind: 'torn-tail-cut',
      file: unacknowledged.file,
      line: 1,
      message: `lowdbStore: ${unacknowledged.file} was being created when a crash stopped the store, before any of its facts was acknowledged; it was removed and nothing acknowledged was lost`,
    });
  } else if (unlisted !== undefined) {
    // The record is one segment behind (a crash right after that segment was created).
    await writeSessionRecord(fs, folder, recordOf(sessionId, segments, log));
  }
  return { log, segments, tail, openRuns, onDisk: true, findings };
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

function restore(
  log: SessionLog,
  openRuns: Map<string, OpenRun>,
  fact: Fact,
  file: string,
  line: number | undefined,
): void {
  // The shared rules refuse a stored fact (a repeated id, one after its run ended): name where.
  const problem = log.restore(fact);
  if (problem !== undefined) {
    throw line === undefined ? legacyCorruption(file, problem) : corruptLine(file, line, problem);
  }
  trackOpenRun(openRuns, fact);
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
