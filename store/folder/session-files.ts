import { createHash } from 'node:crypto';
import path from 'node:path';
import { isTempFileName } from './durable-file-adapter.ts';
import { errorCode, type StoreFs } from './store-fs.ts';

const maxPlainName = 200;

/** The name of a session's record inside its folder (see `session-record.ts`). */
export const sessionRecordName = 'session.json';

/**
 * The folder name of a session: `a-z`, `0-9`, `_` and `-` as they are, every other UTF-8 byte
 * as `~XX`, so names are safe and distinct on every file system, case-insensitive ones too. A
 * name that would pass 200 characters becomes `~h` and a SHA-256 of the id (the id itself is
 * inside the session's record and every segment).
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
 * The session id a folder name stands for; `undefined` for a hashed name (read the session's
 * record or a segment) or a name that is not a session folder (a leftover `.new-…` staging folder).
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

/**
 * `json`: a 0.1.0 segment (one `turnlog.segment/1` JSON document, read-only now);
 * `jsonl`: an append-only segment (a header line, then one fact per line).
 */
export type SegmentFormat = 'json' | 'jsonl';

/** One segment file found in a session folder. */
export interface SegmentName {
  index: number;
  format: SegmentFormat;
  /** Its file name: `000042.json` or `000042.jsonl`. */
  name: string;
}

/** `000042.jsonl` for segment 42 (`000042.json` for a 0.1.0 segment). */
export function segmentFileName(index: number, format: SegmentFormat): string {
  return `${String(index).padStart(6, '0')}.${format}`;
}

/** What a session folder holds. */
export interface SessionListing {
  /** Segment files, by number. */
  segments: SegmentName[];
  /** Whether the session's record (`session.json`) exists. */
  hasRecord: boolean;
}

/**
 * Lists a session folder; `undefined` when the folder does not exist. With `removeTemps`,
 * deletes leftover temp files of a crashed record write on the way — only safe when no write of
 * this session is in flight (the store holds the lock and has not loaded it yet).
 */
export async function listSessionFolder(
  fs: StoreFs,
  folder: string,
  options: { removeTemps: boolean },
): Promise<SessionListing | undefined> {
  let names: string[];
  try {
    names = await fs.readdir(folder);
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return undefined;
    throw error;
  }
  const segments: SegmentName[] = [];
  for (const name of names) {
    const match = /^(\d{6,})\.(jsonl?)$/.exec(name);
    if (match !== null) {
      segments.push({ index: Number(match[1]), format: match[2] as SegmentFormat, name });
    } else if (options.removeTemps && isTempFileName(name)) {
      await fs.unlink(path.join(folder, name)).catch(() => {});
    }
  }
  segments.sort((left, right) => left.index - right.index);
  return { segments, hasRecord: names.includes(sessionRecordName) };
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
