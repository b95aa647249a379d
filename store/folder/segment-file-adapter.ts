import type { Adapter } from 'lowdb';
import type { Fact } from '../../events/facts.ts';
import { StoreCorruptionError } from '../event-store.ts';
import { errorCode, nodeStoreFs, type StoreFs } from './store-fs.ts';

const utf8 = new TextDecoder();

/** The `format` of a segment's header line; a future layout gets a new tag. */
export const segmentFormat = 'turnlog.segment/2';

/** A segment's first line, written once when the segment is created. */
export interface SegmentHeader {
  format: typeof segmentFormat;
  sessionId: string;
  /** The segment's number: its file is `000042.jsonl` for 42. */
  segment: number;
  /** The `seq` of the segment's first fact. */
  firstSeq: number;
  /** Runs open before the segment's first fact, so `openRuns()` reads only the tail segment. */
  openRuns: { turnId: string; runId: string }[];
}

/** A segment as lowdb holds it: the header and the facts after it (one JSON line each). */
export interface SegmentFile {
  header: SegmentHeader;
  facts: Fact[];
}

/** A last line without its newline found by `read`: bytes from `keep` on were never acknowledged. */
export interface TornTail {
  /** The 1-based line it starts on (1: not even the header is complete). */
  line: number;
  /** The length of the complete lines before it, in bytes. */
  keep: number;
  /** Its length in bytes. */
  bytes: number;
}

/**
 * The lowdb adapter of one append-only segment file (JSON Lines: the header, then one fact per
 * line). `write` never rewrites: the first write creates the file with its header and facts and
 * fsyncs it; every later write appends only the facts not written yet and `fdatasync`s. `read`
 * parses every complete line and notes a torn last line (one without its newline) in `torn`
 * instead of failing: the store decides to cut it (`cut`). A file without a complete header line
 * reads as `null` with `torn` set.
 *
 * @example
 * const tail = new Low(new SegmentFileAdapter(file), { header, facts: [] });
 * tail.data.facts.push(fact);
 * await tail.write(); // appends one line, then fdatasync
 */
export class SegmentFileAdapter implements Adapter<SegmentFile> {
  readonly file: string;
  /** Set by `read`: the torn last line, if there was one. */
  torn: TornTail | undefined;
  readonly #fs: StoreFs;
  /** Facts in the file; `undefined` until it was read or created. */
  #written: number | undefined;
  /** The file's length when it was last read or synced: what `undo` cuts it back to. */
  #synced = 0;
  /** What the last `write` changed before it failed, for `undo`. */
  #failed: 'created' | 'appended' | undefined;

  constructor(
    file: string,
    options: {
      fs?: StoreFs;
      /** What the file holds (one this process created elsewhere and moved here). */
      written?: { facts: number; bytes: number };
    } = {},
  ) {
    this.file = file;
    this.#fs = options.fs ?? nodeStoreFs;
    this.#written = options.written?.facts;
    this.#synced = options.written?.bytes ?? 0;
  }

  /** The same segment after its file was renamed to `file` (its facts and length known). */
  movedTo(file: string): SegmentFileAdapter {
    return new SegmentFileAdapter(file, {
      fs: this.#fs,
      written: { facts: this.#written ?? 0, bytes: this.#synced },
    });
  }

  async read(): Promise<SegmentFile | null> {
    let bytes: Uint8Array;
    try {
      bytes = await this.#fs.readFile(this.file);
    } catch (error) {
      if (errorCode(error) === 'ENOENT') return null;
      throw error;
    }
    const parsed = parseSegment(bytes, this.file);
    this.torn = parsed.torn;
    this.#written = parsed.segment?.facts.length;
    this.#synced = parsed.torn?.keep ?? bytes.length;
    return parsed.segment;
  }

  async write(data: SegmentFile): Promise<void> {
    const fresh = data.facts.slice(this.#written ?? 0);
    if (this.#written !== undefined && fresh.length === 0) return;
    const lines = (this.#written === undefined ? [data.header, ...fresh] : fresh).map(
      (value) => `${JSON.stringify(value)}\n`,
    );
    const bytes = Buffer.from(lines.join(''), 'utf8');
    const created = this.#written === undefined;
    this.#failed = undefined;
    // 'wx': a segment is created once; a leftover of the same name is never overwritten.
    const handle = await this.#fs.open(this.file, created ? 'wx' : 'a');
    this.#failed = created ? 'created' : 'appended';
    try {
      await handle.write(bytes);
      // A new file: its size and blocks too (the folder is synced by the caller).
      if (created) await handle.sync();
      else await handle.datasync();
    } finally {
      await handle.close();
    }
    this.#failed = undefined;
    this.#written = data.facts.length;
    this.#synced = created ? bytes.length : this.#synced + bytes.length;
  }

  /**
   * Undoes the last `write` after it failed. A failed fsync is not a "maybe": the OS may have
   * dropped the unsynced bytes from its queue while still serving them from its cache, so a
   * later read (or a later fsync that succeeds) cannot tell whether they are on disk. The file
   * is therefore cut back to the length last synced and fsynced again — or removed, when the
   * failed write was creating it (the caller fsyncs the folder). Throws when that fails too.
   */
  async undo(): Promise<void> {
    const failed = this.#failed;
    if (failed === undefined) return;
    if (failed === 'created') {
      await this.#fs.unlink(this.file).catch((error: unknown) => {
        if (errorCode(error) !== 'ENOENT') throw error;
      });
    } else {
      const handle = await this.#fs.open(this.file, 'r+');
      try {
        await handle.truncate(this.#synced);
        await handle.sync();
      } finally {
        await handle.close();
      }
    }
    this.#failed = undefined;
  }

  /** Removes the torn last line `read` found, durably (truncate, then fsync). */
  async cut(): Promise<void> {
    if (this.torn === undefined) return;
    const handle = await this.#fs.open(this.file, 'r+');
    try {
      await handle.truncate(this.torn.keep);
      await handle.sync();
    } finally {
      await handle.close();
    }
    this.#synced = this.torn.keep;
    this.torn = undefined;
  }
}

/**
 * Parses a segment file's bytes: the header and facts of its complete lines (structure only: the
 * store checks `seq`, session and the header's values), and the torn last line, if any. Throws
 * `StoreCorruptionError` naming the file and line for a complete line that is not what it must be.
 */
function parseSegment(
  bytes: Uint8Array,
  file: string,
): { segment: SegmentFile | null; torn: TornTail | undefined } {
  const keep = bytes.lastIndexOf(0x0a) + 1;
  const lines = utf8.decode(bytes.subarray(0, keep)).split('\n');
  lines.pop(); // after the last newline
  const torn =
    keep < bytes.length || keep === 0
      ? { line: lines.length + 1, keep, bytes: bytes.length - keep }
      : undefined;
  if (lines.length === 0) return { segment: null, torn };
  const header = parseLine(lines[0] as string, file, 1);
  const problem = headerProblem(header);
  if (problem !== undefined) throw corruptLine(file, 1, problem);
  const facts = lines.slice(1).map((line, index) => {
    const fact = parseLine(line, file, index + 2);
    if (typeof fact !== 'object' || fact === null || Array.isArray(fact)) {
      throw corruptLine(file, index + 2, 'it is not a fact (a JSON object)');
    }
    return fact as Fact;
  });
  return { segment: { header: header as SegmentHeader, facts }, torn };
}

/** A `StoreCorruptionError` for one line of a segment file. */
export function corruptLine(file: string, line: number, problem: string): StoreCorruptionError {
  return new StoreCorruptionError({
    message: `lowdbStore: ${file} line ${line} is not valid: ${problem}; restore the file from a backup, or move it away (with the segments after it) to keep the session up to the segment before`,
    file,
    line,
  });
}

function parseLine(line: string, file: string, number: number): unknown {
  try {
    return JSON.parse(line);
  } catch (error) {
    const reason = line === '' ? 'it is empty' : (error as Error).message;
    throw corruptLine(file, number, `it is not JSON (${reason})`);
  }
}

function headerProblem(value: unknown): string | undefined {
  const header = value as Partial<SegmentHeader> | null;
  if (typeof header !== 'object' || header === null || header.format !== segmentFormat) {
    return `it is not a ${segmentFormat} header`;
  }
  if (typeof header.sessionId !== 'string') return 'its header has no sessionId';
  if (!Number.isInteger(header.segment) || !Number.isInteger(header.firstSeq)) {
    return 'its header has no whole segment and firstSeq';
  }
  const runs = header.openRuns;
  const isRun = (run: unknown) =>
    typeof (run as { turnId?: unknown })?.turnId === 'string' &&
    typeof (run as { runId?: unknown })?.runId === 'string';
  if (!Array.isArray(runs) || !runs.every(isRun)) return 'its header has no openRuns list';
  return undefined;
}
