import { Low } from 'lowdb';
import type { Fact } from '../../events/facts.ts';
import { StoreCorruptionError } from '../event-store.ts';
import { storedFactProblem } from '../session-log.ts';
import { DurableFileAdapter } from './durable-file-adapter.ts';
import type { StoreFs } from './store-fs.ts';

/** The `format` of a segment written by turnlog 0.1.0. */
export const legacySegmentFormat = 'turnlog.segment/1';

/**
 * A segment file written by turnlog 0.1.0 (`000000.json`): one JSON document, rewritten whole on
 * each append then. Newer stores read these and never write them: a session continues in
 * append-only segments after its last 0.1.0 one.
 */
export interface LegacySegmentDocument {
  format: typeof legacySegmentFormat;
  sessionId: string;
  segment: number;
  /** Runs still open after this segment's last fact. */
  openRuns: { turnId: string; runId: string }[];
  facts: Fact[];
}

/** Reads a 0.1.0 segment document (through lowdb, as 0.1.0 did). */
export async function readLegacySegment(fs: StoreFs, file: string): Promise<LegacySegmentDocument> {
  const low = new Low<LegacySegmentDocument | null>(new DurableFileAdapter(file, { fs }), null);
  await low.read();
  if (low.data === null) throw legacyCorruption(file, 'it disappeared while the session was read');
  return low.data;
}

/**
 * Checks a 0.1.0 segment as 0.1.0 did: its format, session and number, and facts of this session
 * with `seq` from `firstSeq` on. Returns its facts.
 */
export function checkLegacySegment(
  document: LegacySegmentDocument,
  expected: { file: string; sessionId: string; index: number; firstSeq: number },
): Fact[] {
  const { file } = expected;
  if (
    typeof document !== 'object' ||
    document === null ||
    document.format !== legacySegmentFormat
  ) {
    throw legacyCorruption(file, `it is not a ${legacySegmentFormat} document`);
  }
  if (document.sessionId !== expected.sessionId) {
    throw legacyCorruption(
      file,
      `it belongs to session ${document.sessionId}, not ${expected.sessionId}`,
    );
  }
  if (document.segment !== expected.index) {
    throw legacyCorruption(file, `it says it is segment ${document.segment}`);
  }
  if (!Array.isArray(document.facts) || document.facts.length === 0) {
    throw legacyCorruption(file, 'it holds no facts');
  }
  if (!Array.isArray(document.openRuns)) throw legacyCorruption(file, 'it has no openRuns summary');
  document.facts.forEach((fact, offset) => {
    const seq = expected.firstSeq + offset;
    const problem = storedFactProblem(fact, { sessionId: expected.sessionId, seq });
    if (problem !== undefined) throw legacyCorruption(file, problem);
  });
  return document.facts;
}

/** A `StoreCorruptionError` naming a 0.1.0 segment. */
export function legacyCorruption(file: string, problem: string): StoreCorruptionError {
  return new StoreCorruptionError({
    message: `lowdbStore: ${file} is not a valid segment: ${problem}; restore it from a backup or move it away (with the segments after it) to keep the session up to the segment before`,
    file,
  });
}
