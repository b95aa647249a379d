import type { Fact } from '../../events/facts.ts';
import { type EventStore, StoreCorruptionError, StoreError } from '../event-store.ts';
import { mapLimit } from '../folder/session-files.ts';
import type { EndedSession, RemovedSession, SessionRetention } from '../session-retention.ts';
import { removeArchiveFile, syncArchiveFolder, writeArchiveFile } from './archive-files.ts';
import { checkEndedBefore } from './ended-session.ts';
import { encodeSessionArchive } from './session-archive.ts';

/** Options of `purgeSessions`. */
export interface PurgeOptions {
  /** Sessions whose last run ended before this time go (a session with an open run never does). */
  endedBefore: Date;
  /**
   * A folder (it must exist) to archive each session into before it is removed: one JSON Lines
   * file per session (`importSession` reads it back). Without it, sessions are only removed.
   */
  archiveDir?: string;
  /** Sessions removed per store call (one transaction on PostgreSQL). Default 100. */
  batchSize?: number;
  /** Called once per session decided, in order. */
  onProgress?: (progress: PurgeProgress) => void;
  /** Stops the purge between two batches (the report says so); nothing is left half done. */
  signal?: AbortSignal;
}

/** One session decided by `purgeSessions`. */
export interface PurgeProgress {
  /** Sessions decided so far, this one included. */
  done: number;
  /** Sessions found ended before `endedBefore` when the purge started. */
  total: number;
  sessionId: string;
  /** `removed`, or why it stayed (`changed`, `unreadable`) or was gone already (`absent`). */
  outcome: RemovedSession['outcome'];
  /** Its archive file, when it was archived and removed. */
  archive: string | undefined;
}

/** What `purgeSessions` did. */
export interface PurgeReport {
  /** Sessions found ended before `endedBefore`. */
  found: number;
  removed: number;
  /** Archive files written (one per removed session, with `archiveDir`). */
  archived: string[];
  /** Sessions found but left: they changed (a new run), were gone already, or cannot be read. */
  left: RemovedSession[];
  /** True when `signal` stopped the purge before every session found was decided. */
  stopped: boolean;
}

/**
 * Removes — or, with `archiveDir`, archives then removes — every session whose last run ended
 * before `endedBefore`. Never a session with an open run, nor one that changed since it was found.
 * Crash-safe and idempotent: a kill leaves each session whole or gone (and an archive is durable
 * before its session is removed), and running it again finishes the work.
 *
 * ```
 * found = store.endedSessions({ endedBefore })           // no open run, last run.ended < endedBefore
 * for each batch of found:
 *   with archiveDir: read each session; if it still ends at lastSeq, write its archive (fsynced,
 *     renamed; 8 at a time), then fsync the folder once: every archive durable before removal
 *   store.removeSessions(batch)                         // each: removed only if still at lastSeq
 *   a session left (changed, unreadable): its new archive is removed again
 * ```
 *
 * @example
 * const endedBefore = new Date(Date.now() - 30 * 24 * 3600 * 1000);
 * const report = await purgeSessions(store, { endedBefore, archiveDir: '/backups/turnlog' });
 */
export async function purgeSessions(
  store: EventStore & SessionRetention,
  options: PurgeOptions,
): Promise<PurgeReport> {
  checkEndedBefore(options.endedBefore, 'purgeSessions');
  const batchSize = Math.max(1, Math.floor(options.batchSize ?? 100));
  const found = await store.endedSessions({ endedBefore: options.endedBefore });
  const report: PurgeReport = {
    found: found.length,
    removed: 0,
    archived: [],
    left: [],
    stopped: false,
  };
  let done = 0;
  for (let start = 0; start < found.length; start += batchSize) {
    if (options.signal?.aborted === true) {
      report.stopped = true;
      break;
    }
    const batch = found.slice(start, start + batchSize);
    const { archives, left, ready } = await archiveBatch(store, batch, options.archiveDir);
    const outcomes = [...left, ...(await store.removeSessions(ready))];
    for (const { sessionId, outcome } of outcomes) {
      let archive = archives.get(sessionId);
      if (outcome === 'removed') report.removed += 1;
      else report.left.push({ sessionId, outcome });
      // An archive of a session that stays would be mistaken for its whole history: drop it.
      if (archive !== undefined && (outcome === 'changed' || outcome === 'unreadable')) {
        await removeArchiveFile(archive);
        archive = undefined;
      }
      if (archive !== undefined) report.archived.push(archive);
      done += 1;
      options.onProgress?.({ done, total: found.length, sessionId, outcome, archive });
    }
  }
  return report;
}

/**
 * With `dir`, writes the batch's archives (8 at a time) and fsyncs the folder once, so every
 * archive is durable before any of its sessions is removed; returns the sessions ready to go,
 * their archives, and those left (changed or unreadable). Without `dir`, every session is ready.
 */
async function archiveBatch(
  store: EventStore,
  batch: readonly EndedSession[],
  dir: string | undefined,
): Promise<{ archives: Map<string, string>; left: RemovedSession[]; ready: EndedSession[] }> {
  const archives = new Map<string, string>();
  if (dir === undefined) return { archives, left: [], ready: [...batch] };
  const written = await mapLimit(batch, 8, (session) => archiveSession(store, session, dir));
  const left: RemovedSession[] = [];
  const ready: EndedSession[] = [];
  for (const [index, result] of written.entries()) {
    const session = batch[index] as EndedSession;
    if (typeof result !== 'string') left.push(result);
    else {
      archives.set(session.sessionId, result);
      ready.push(session);
    }
  }
  if (archives.size > 0) await syncArchiveFolder(dir);
  return { archives, left, ready };
}

/**
 * Writes the session's archive (the folder is fsynced by the caller) and returns its file; or why it stays: it no longer ends at the
 * seq it was found at, or it cannot be read (a damaged session is never archived short).
 */
async function archiveSession(
  store: EventStore,
  session: EndedSession,
  dir: string,
): Promise<string | RemovedSession> {
  const { sessionId } = session;
  let facts: Fact[];
  try {
    facts = await store.read(sessionId);
  } catch (error) {
    if (StoreCorruptionError.isInstance(error) || StoreError.isInstance(error)) {
      return { sessionId, outcome: 'unreadable' };
    }
    throw error;
  }
  if (facts.length !== session.lastSeq) return { sessionId, outcome: 'changed' };
  const text = encodeSessionArchive(sessionId, facts);
  return writeArchiveFile(dir, sessionId, text, { syncFolder: false });
}
