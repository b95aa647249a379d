import { createHash } from 'node:crypto';
import { readdir, unlink } from 'node:fs/promises';
import path from 'node:path';
import { type Adapter, Low } from 'lowdb';
import type { Fact } from '../events/facts.ts';
import { errorCode, isTempFileName } from './durable-file-adapter.ts';
import { type OpenRun, StoreCorruptionError } from './event-store.ts';
import { SessionLog, storedFactProblem, trackOpenRun } from './session-log.ts';

/** The `format` tag of a segment document; a future layout gets a new tag. */
export const segmentFormat = 'turnlog.segment/1';

/** One segment file of a session: up to `segmentSize` consecutive facts, a lowdb document. */
export interface SegmentDocument {
  format: typeof segmentFormat;
  sessionId: string;
  /** The segment's number: 0, 1, 2, … (its file is `000000.json`, `000001.json`, …). */
  segment: number;
  /** Runs still open after this segment's last fact, so `openRuns()` reads only a tail. */
  openRuns: { turnId: string; runId: string }[];
  facts: Fact[];
}

/** Makes the lowdb adapter of one segment file (the store's writes and reads go through it). */
export type SegmentAdapterFactory = (file: string) => Adapter<SegmentDocument>;

/** Where one durable segment sits in the session: its number, first `seq` and fact count. */
export interface SegmentExtent {
  index: number;
  firstSeq: number;
  count: number;
}

/** A session read from its folder. */
export interface LoadedSession {
  log: SessionLog;
  segments: SegmentExtent[];
  openRuns: Map<string, OpenRun>;
  /** False when the session has no folder yet (no fact was ever stored). */
  onDisk: boolean;
}

const maxPlainName = 200;

/**
 * The folder name of a session: `a-z`, `0-9`, `_` and `-` as they are, every other UTF-8 byte
 * as `~XX`, so names are safe and distinct on every file system, case-insensitive ones too. A
 * name that would pass 200 characters becomes `~h` and a SHA-256 of the id (the id itself is
 * inside every segment).
 */
export function sessionFolderName(sessionId: string): string {
  let name = '';
  for (const byte of Buffer.from(sessionId, 'utf8')) {
    const char = String.fromCharCode(byte);
    name += /[a-z0-9_-]/.test(char) ? char : `~${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  if (name.length <= maxPlainName) return name;
  return `~h${createHash('sha256').update(sessionId, 'utf8').digest('hex')}`;
}

/**
 * The session id a folder name stands for; `undefined` for a hashed name (read a segment's
 * `sessionId`) or a name that is not a session folder (a leftover `.new-…` staging folder).
 */
export function sessionIdOfFolder(name: string): string | undefined {
  if (name.startsWith('~h') || !/^([a-z0-9_-]|~[0-9A-F]{2})+$/.test(name)) return undefined;
  const bytes: number[] = [];
  for (let index = 0; index < name.length; index += 1) {
    if (name[index] === '~') {
      bytes.push(Number.parseInt(name.slice(index + 1, index + 3), 16));
      index += 2;
    } else {
      bytes.push(name.charCodeAt(index));
    }
  }
  return Buffer.from(bytes).toString('utf8');
}

/** True for a folder name the store makes for a session (plain or hashed). */
export function isSessionFolderName(name: string): boolean {
  return /^~h[0-9a-f]{64}$/.test(name) || sessionIdOfFolder(name) !== undefined;
}

/** `000042.json` for segment 42. */
export function segmentFileName(index: number): string {
  return `${String(index).padStart(6, '0')}.json`;
}

function segmentIndexOf(name: string): number | undefined {
  const match = /^(\d{6,})\.json$/.exec(name);
  return match?.[1] === undefined ? undefined : Number(match[1]);
}

/**
 * Lists a session folder's segment numbers in order; `undefined` when the folder does not exist.
 * With `removeTemps`, deletes leftover temp files of a crashed write on the way — only safe when
 * no write of this session is in flight (the store holds the lock and has not loaded it yet).
 */
export async function listSegments(
  folder: string,
  options: { removeTemps: boolean },
): Promise<number[] | undefined> {
  let names: string[];
  try {
    names = await readdir(folder);
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return undefined;
    throw error;
  }
  const indices: number[] = [];
  for (const name of names) {
    const index = segmentIndexOf(name);
    if (index !== undefined) indices.push(index);
    else if (options.removeTemps && isTempFileName(name))
      await unlink(path.join(folder, name)).catch(() => {});
  }
  return indices.sort((left, right) => left - right);
}

/**
 * Reads a whole session from its folder and checks it: every segment present (0, 1, 2, …),
 * valid JSON, facts of this session with `seq` 1, 2, 3, … across segments, and each segment's
 * open-runs summary matching its facts. Any problem throws `StoreCorruptionError` naming the
 * file — a session is never returned shortened.
 */
export async function loadSession(options: {
  folder: string;
  sessionId: string;
  createAdapter: SegmentAdapterFactory;
}): Promise<LoadedSession> {
  const { folder, sessionId } = options;
  const log = new SessionLog({ sessionId, storeName: 'lowdbStore' });
  const openRuns = new Map<string, OpenRun>();
  const indices = await listSegments(folder, { removeTemps: true });
  if (indices === undefined) return { log, segments: [], openRuns, onDisk: false };
  indices.forEach((index, position) => {
    if (index !== position) {
      const missing = path.join(folder, segmentFileName(position));
      throw new StoreCorruptionError({
        message: `lowdbStore: ${missing} is missing but later segments of session ${sessionId} exist; restore it from a backup, or move the later segments away to keep the session up to that point`,
        file: missing,
      });
    }
  });
  const documents = await mapLimit(indices, 8, (index) =>
    readSegment(options.createAdapter, path.join(folder, segmentFileName(index))),
  );
  const segments: SegmentExtent[] = [];
  documents.forEach((document, index) => {
    const file = path.join(folder, segmentFileName(index));
    const firstSeq = log.lastSeq + 1;
    const facts = checkSegment(document, { file, sessionId, index, firstSeq });
    for (const fact of facts) {
      const problem = log.restore(fact);
      if (problem !== undefined) throw corruption(file, problem);
      trackOpenRun(openRuns, fact);
    }
    if (summaryOf(openRuns) !== JSON.stringify(document.openRuns)) {
      throw corruption(file, 'its openRuns summary does not match the facts of the session');
    }
    segments.push({ index, firstSeq, count: facts.length });
  });
  return { log, segments, openRuns, onDisk: true };
}

/**
 * The open runs of a session from its last segment alone (its summary), without reading the
 * whole session; plus the session id the segment names. `undefined` for a folder with no
 * segment.
 */
export async function readTail(options: {
  folder: string;
  /** The id the folder name stands for (`undefined` for a hashed name). */
  sessionId: string | undefined;
  createAdapter: SegmentAdapterFactory;
}): Promise<{ sessionId: string; openRuns: OpenRun[] } | undefined> {
  const indices = await listSegments(options.folder, { removeTemps: false });
  const last = indices?.at(-1);
  if (last === undefined) return undefined;
  const file = path.join(options.folder, segmentFileName(last));
  const document = await readSegment(options.createAdapter, file);
  const sessionId = options.sessionId ?? document.sessionId;
  const firstSeq = document.facts?.[0]?.seq;
  checkSegment(document, { file, sessionId, index: last, firstSeq: firstSeq ?? 1 });
  return {
    sessionId,
    openRuns: document.openRuns.map(({ turnId, runId }) => ({ sessionId, turnId, runId })),
  };
}

/** The `openRuns` field of a segment document for the runs open after its last fact. */
export function openRunsSummary(openRuns: Map<string, OpenRun>): SegmentDocument['openRuns'] {
  return [...openRuns.values()].map(({ turnId, runId }) => ({ turnId, runId }));
}

/** Runs `task` over `items` with at most `limit` at a time (many sessions, few file handles). */
export async function mapLimit<TItem, TResult>(
  items: readonly TItem[],
  limit: number,
  task: (item: TItem) => Promise<TResult>,
): Promise<TResult[]> {
  const results: TResult[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    for (let index = next++; index < items.length; index = next++) {
      results[index] = await task(items[index] as TItem);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

async function readSegment(
  createAdapter: SegmentAdapterFactory,
  file: string,
): Promise<SegmentDocument> {
  // The adapter's `read` already answers `null` for a missing file.
  const adapter = createAdapter(file) as Adapter<SegmentDocument | null>;
  const low = new Low<SegmentDocument | null>(adapter, null);
  await low.read();
  if (low.data === null) throw corruption(file, 'it disappeared while the session was read');
  return low.data;
}

function checkSegment(
  document: SegmentDocument,
  expected: { file: string; sessionId: string; index: number; firstSeq: number },
): Fact[] {
  const { file } = expected;
  if (typeof document !== 'object' || document === null || document.format !== segmentFormat) {
    throw corruption(file, `it is not a ${segmentFormat} document`);
  }
  if (document.sessionId !== expected.sessionId) {
    throw corruption(
      file,
      `it belongs to session ${document.sessionId}, not ${expected.sessionId}`,
    );
  }
  if (document.segment !== expected.index) {
    throw corruption(file, `it says it is segment ${document.segment}`);
  }
  if (!Array.isArray(document.facts) || document.facts.length === 0) {
    throw corruption(file, 'it holds no facts');
  }
  if (!Array.isArray(document.openRuns)) throw corruption(file, 'it has no openRuns summary');
  document.facts.forEach((fact, offset) => {
    const seq = expected.firstSeq + offset;
    const problem = storedFactProblem(fact, { sessionId: expected.sessionId, seq });
    if (problem !== undefined) throw corruption(file, problem);
  });
  return document.facts;
}

function summaryOf(openRuns: Map<string, OpenRun>): string {
  return JSON.stringify(openRunsSummary(openRuns));
}

function corruption(file: string, problem: string): StoreCorruptionError {
  return new StoreCorruptionError({
    message: `lowdbStore: ${file} is not a valid segment: ${problem}; restore it from a backup or move it away (with the segments after it) to keep the session up to the segment before`,
    file,
  });
}
