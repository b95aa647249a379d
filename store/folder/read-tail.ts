import path from 'node:path';
import type { Fact } from '../../events/facts.ts';
import type { OpenRun } from '../event-store.ts';
import { storedFactProblem, trackOpenRun } from '../session-log.ts';
import { checkLegacySegment, legacyCorruption, readLegacySegment } from './legacy-segments.ts';
import { checkHeader } from './load-session.ts';
import { corruptLine, SegmentFileAdapter } from './segment-file-adapter.ts';
import { listSessionFolder, type SegmentName, sessionRecordName } from './session-files.ts';
import { checkListing, checkRecordEntry, readSessionRecord } from './session-record.ts';
import type { StoreFs } from './store-fs.ts';

const utf8 = new TextDecoder();

/** What `readTail` reads of a session. */
export interface SessionTail {
  sessionId: string;
  openRuns: OpenRun[];
  /** The last complete fact's `seq`, and that fact (retention reads when its last run ended). */
  lastSeq: number;
  lastFact: Fact | undefined;
}

/**
 * The open runs of a session read from its record and its tail segment — the header's summary
 * plus the `run.started`/`run.ended` facts of the tail — without parsing the whole session; plus
 * the session's id. Checks what it reads (the folder against the record, the tail against its
 * record entry and header) and throws `StoreCorruptionError` on a mismatch. The log is the
 * truth: the header's summary is an index, so the segments before the tail are scanned for their
 * `run.started`/`run.ended` lines (only those lines are parsed) and a summary that disagrees is a
 * `StoreCorruptionError` too, never a run silently left out. A torn last line is ignored (it was
 * never acknowledged), not cut: only loading cuts. `undefined` for a folder that no longer exists.
 */
export async function readTail(options: {
  fs: StoreFs;
  folder: string;
  /** The id the folder name stands for (`undefined` for a hashed name). */
  sessionId: string | undefined;
}): Promise<SessionTail | undefined> {
  const { fs, folder } = options;
  const listing = await listSessionFolder(fs, folder, { removeTemps: false });
  if (listing === undefined) return undefined;
  const record = listing.hasRecord ? await readSessionRecord(fs, folder) : undefined;
  const unlisted = checkListing(listing, record, options);
  const recordFile = path.join(folder, sessionRecordName);
  for (let position = listing.segments.length - 1; position >= 0; position -= 1) {
    const segment = listing.segments[position];
    if (segment === undefined) break;
    const file = path.join(folder, segment.name);
    const entry = record?.segments[position];
    if (segment.format === 'json') {
      const document = await readLegacySegment(fs, file);
      const sessionId = options.sessionId ?? record?.sessionId ?? document.sessionId;
      const firstSeq = document.facts?.[0]?.seq ?? 1;
      const facts = checkLegacySegment(document, {
        file,
        sessionId,
        index: segment.index,
        firstSeq,
      });
      if (entry !== undefined) {
        const found = { file, firstSeq, firstId: facts[0]?.id, openRuns: undefined };
        checkRecordEntry(
          entry,
          { ...found, lastSeq: firstSeq + facts.length - 1, lastId: facts.at(-1)?.id },
          recordFile,
        );
      }
      const openRuns = document.openRuns.map(({ turnId, runId }) => ({ sessionId, turnId, runId }));
      const logged = await openRunsOfSegments(fs, folder, listing.segments.slice(0, position));
      for (const fact of facts) trackOpenRun(logged, fact);
      checkSummary(openRuns, logged, () =>
        legacyCorruption(file, 'its openRuns summary does not match the facts of the session'),
      );
      return { sessionId, openRuns, lastSeq: firstSeq + facts.length - 1, lastFact: facts.at(-1) };
    }
    const data = await new SegmentFileAdapter(file, { fs }).read();
    if (data === null || data.facts.length === 0) {
      // Created by a write a crash cut short, never acknowledged: the tail is the one before.
      if (segment.name === unlisted?.name) continue;
      throw corruptLine(file, data === null ? 1 : 2, 'it holds no complete fact');
    }
    const { header, facts } = data;
    const sessionId = options.sessionId ?? record?.sessionId ?? header.sessionId;
    checkHeader(header, {
      file,
      sessionId,
      index: segment.index,
      firstSeq: entry?.firstSeq ?? header.firstSeq,
      // The summary is checked against the record's copy below (the facts before are not read).
      before: undefined,
    });
    const open = new Map<string, OpenRun>();
    for (const { turnId, runId } of header.openRuns) open.set(runId, { sessionId, turnId, runId });
    facts.forEach((fact, offset) => {
      const problem = storedFactProblem(fact, { sessionId, seq: header.firstSeq + offset });
      if (problem !== undefined) throw corruptLine(file, offset + 2, problem);
      trackOpenRun(open, fact);
    });
    if (entry !== undefined) {
      checkRecordEntry(
        entry,
        {
          file,
          firstSeq: header.firstSeq,
          firstId: facts[0]?.id,
          lastSeq: header.firstSeq + facts.length - 1,
          lastId: facts.at(-1)?.id,
          openRuns: header.openRuns,
        },
        recordFile,
      );
    }
    // The log is the truth: the summary must be what the segments before leave open.
    const logged = await openRunsOfSegments(fs, folder, listing.segments.slice(0, position));
    const summary = header.openRuns.map(({ turnId, runId }) => ({ sessionId, turnId, runId }));
    checkSummary(summary, logged, () =>
      corruptLine(file, 1, 'its openRuns summary does not match the facts before it'),
    );
    const lastSeq = header.firstSeq + facts.length - 1;
    return { sessionId, openRuns: [...open.values()], lastSeq, lastFact: facts.at(-1) };
  }
  return undefined;
}

/**
 * The runs the segments leave open, from their `run.started` and `run.ended` facts: a line is
 * parsed only when it holds `"run.` (a fact's own type, or a string or nested value — told apart
 * by parsing), so scanning a segment costs a read and a search, not a parse of every fact.
 */
async function openRunsOfSegments(
  fs: StoreFs,
  folder: string,
  segments: readonly SegmentName[],
): Promise<Map<string, OpenRun>> {
  const open = new Map<string, OpenRun>();
  for (const segment of segments) {
    const file = path.join(folder, segment.name);
    if (segment.format === 'json') {
      for (const fact of (await readLegacySegment(fs, file)).facts ?? []) trackOpenRun(open, fact);
      continue;
    }
    const lines = utf8.decode(await fs.readFile(file)).split('\n');
    for (let line = 1; line < lines.length; line += 1) {
      const text = lines[line] as string;
      if (!text.includes('"run.')) continue;
      let fact: Fact;
      try {
        fact = JSON.parse(text) as Fact;
      } catch (error) {
        throw corruptLine(file, line + 1, `it is not JSON (${(error as Error).message})`);
      }
      trackOpenRun(open, fact);
    }
  }
  return open;
}

/** Throws `corruption()` when a summary of open runs is not the one the log leaves open. */
function checkSummary(
  summary: readonly OpenRun[],
  logged: Map<string, OpenRun>,
  corruption: () => Error,
): void {
  const key = (runs: Iterable<OpenRun>) =>
    JSON.stringify([...runs].map(({ turnId, runId }) => [turnId, runId]));
  if (key(summary) !== key(logged.values())) throw corruption();
}
