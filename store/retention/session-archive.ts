import type { Fact } from '../../events/facts.ts';
import { type EventStore, StoreInputError } from '../event-store.ts';
import { checkSessionId } from '../session-log.ts';
import {
  ArchiveFormatError,
  SessionExistsError,
  type SessionRetention,
} from '../session-retention.ts';
import { restoreSessionLog } from './ended-session.ts';

/** The format tag of a session archive's first line; a new layout gets a new number. */
export const sessionArchiveFormat = 'turnlog.session-archive/1';

/** A session archive's first line. */
export interface SessionArchiveHeader {
  format: typeof sessionArchiveFormat;
  sessionId: string;
  /** How many facts follow (one per line): a cut archive is found, never imported short. */
  facts: number;
}

/** One session read from an archive, checked. */
export interface SessionArchive {
  sessionId: string;
  facts: Fact[];
}

/**
 * One session as JSON Lines: the header (`{"format":"turnlog.session-archive/1","sessionId":…,
 * "facts":n}`), then each fact as stored, in `seq` order, one per line, each line ending with
 * `\n`. The same text is what `exportSession` returns and what `purgeSessions` archives.
 */
export function encodeSessionArchive(sessionId: string, facts: readonly Fact[]): string {
  const header: SessionArchiveHeader = {
    format: sessionArchiveFormat,
    sessionId,
    facts: facts.length,
  };
  return `${[header, ...facts].map((line) => JSON.stringify(line)).join('\n')}\n`;
}

/**
 * Reads a session archive and checks it whole: a known format, the header's session and count,
 * every fact valid and in its place, and the rules of a log (no id twice, nothing after a run's
 * `run.ended`). Throws `ArchiveFormatError` naming the line.
 */
export function decodeSessionArchive(
  text: string,
  options: { file?: string } = {},
): SessionArchive {
  const file = options.file;
  const fail = (line: number | undefined, problem: string) =>
    new ArchiveFormatError({
      message: `${file ?? 'session archive'}${line === undefined ? '' : `, line ${line}`}: ${problem}; nothing of it was imported`,
      file,
      line,
    });
  const lines = text.endsWith('\n') ? text.slice(0, -1).split('\n') : text.split('\n');
  const parsed = lines.map((line, index) => {
    try {
      return JSON.parse(line) as unknown;
    } catch {
      throw fail(index + 1, 'the line is not JSON (a session archive is JSON Lines)');
    }
  });
  const header = parsed[0] as Partial<SessionArchiveHeader> | undefined;
  if (header?.format !== sessionArchiveFormat) {
    throw fail(
      1,
      `the first line must be a header with format "${sessionArchiveFormat}", got ${JSON.stringify(header?.format)}; an archive of a newer turnlog needs that turnlog`,
    );
  }
  const { sessionId } = header;
  if (typeof sessionId !== 'string' || sessionId === '' || !Number.isInteger(header.facts)) {
    throw fail(1, 'the header needs a sessionId (a non-empty string) and facts (a count)');
  }
  const facts = parsed.slice(1);
  if (facts.length !== header.facts || facts.length === 0) {
    throw fail(
      undefined,
      `the header says ${header.facts} facts and ${facts.length} follow; the archive was cut or edited`,
    );
  }
  const restored = restoreSessionLog({ sessionId, facts, storeName: 'importSession' });
  if (restored.problem !== undefined) throw fail(restored.index + 2, restored.problem);
  return { sessionId, facts: facts as Fact[] };
}

/**
 * One session of a store as a session archive (see `encodeSessionArchive`), to keep or to import
 * into any store with `importSession`. Throws `StoreInputError` for a session with no facts.
 *
 * @example
 * await writeFile('session_1.jsonl', await exportSession(store, 'session_1'));
 */
export async function exportSession(store: EventStore, sessionId: string): Promise<string> {
  checkSessionId(sessionId, 'exportSession');
  const facts = await store.read(sessionId);
  if (facts.length === 0) {
    throw new StoreInputError({
      message: `exportSession: session ${sessionId} has no facts in this store; check the id (store.sessions() lists them)`,
      sessionId,
    });
  }
  return encodeSessionArchive(sessionId, facts);
}

/**
 * Imports one session archive (`exportSession`'s text, or a file `purgeSessions` wrote) into a
 * store, whole or not at all. A session the store holds with exactly these facts is `'identical'`
 * (importing twice is a no-op); with other facts, `SessionExistsError` and nothing is written.
 *
 * @example
 * const { sessionId, outcome } = await importSession(store, await readFile(file, 'utf8'), { file });
 */
export async function importSession(
  store: EventStore & SessionRetention,
  archive: string,
  options: { file?: string } = {},
): Promise<{ sessionId: string; outcome: 'imported' | 'identical' }> {
  const { sessionId, facts } = decodeSessionArchive(archive, options);
  if ((await store.importFacts(sessionId, facts)) === 'imported') {
    return { sessionId, outcome: 'imported' };
  }
  const held = await store.read(sessionId);
  const same =
    held.length === facts.length &&
    held.every((fact, index) => JSON.stringify(fact) === JSON.stringify(facts[index]));
  if (same) return { sessionId, outcome: 'identical' };
  throw new SessionExistsError({
    message: `importSession: the store already holds session ${sessionId} with other facts (${held.length} stored, ${facts.length} in the archive); nothing was imported: purge or rename the stored one first`,
    sessionId,
  });
}
