import type { Fact } from '../events/facts.ts';
import {
  isTurnlogErrorNamed,
  TurnlogError,
  type TurnlogErrorOptions,
} from '../events/turnlog-error.ts';

/**
 * The storage-specific part of retention, archives and imports, which every turnlog store
 * implements beside `EventStore` (memoryStore, lowdbStore, postgresStore). What is shared — which
 * sessions may go, the archive format, archiving before purging, progress, the import's checks —
 * is written once, over these three methods: `purgeSessions`, `exportSession` and `importSession`
 * (store/retention/). Call those, not these.
 */
export interface SessionRetention {
  /**
   * The sessions retention may remove: no run open, the last fact a `run.ended` whose `at` is
   * before `endedBefore` (so every run of the session has ended, the last one before that time),
   * in session id order. A session the store cannot read is left out (and in `findings()`).
   */
  endedSessions(options: { endedBefore: Date }): Promise<EndedSession[]>;
  /**
   * Removes each session wholly — its facts, partial snapshot and, on PostgreSQL, its runs
   * index, leases and inbox — if it still has `lastSeq` as its last `seq` and no open run; a
   * crash leaves each session whole or gone. Sessions are decided one by one, in any order.
   */
  removeSessions(sessions: readonly SessionToRemove[]): Promise<RemovedSession[]>;
  /**
   * Stores a whole session — `facts` with their own `seq` 1, 2, 3, …, checked as a log by the
   * caller — in one atomic step, into a session that has no facts. `'exists'` when the session
   * has facts: nothing was written. The store does not check `facts` again beyond its own needs.
   */
  importFacts(sessionId: string, facts: readonly Fact[]): Promise<'imported' | 'exists'>;
}

/** A session retention may remove (`SessionRetention.endedSessions`). */
export interface EndedSession {
  sessionId: string;
  /** Its last `seq`: removal only happens while it still is. */
  lastSeq: number;
  /** The `at` of its last fact, the `run.ended` of its last run. */
  endedAt: string;
}

/** One session for `removeSessions`: removed only while its last `seq` is still `lastSeq`. */
export interface SessionToRemove {
  sessionId: string;
  lastSeq: number;
}

/**
 * What `removeSessions` did with one session:
 * - `removed`: it is gone;
 * - `changed`: it was left whole: its last `seq` is no longer the one given, or a run of it is open;
 * - `absent`: it has no facts (removed already: a repeated purge is a no-op);
 * - `unreadable`: the store cannot read it (see `findings()`); it was left as it is.
 */
export interface RemovedSession {
  sessionId: string;
  outcome: 'removed' | 'changed' | 'absent' | 'unreadable';
}

/**
 * `importSession` of a session that the store already holds with other facts. Nothing was
 * written; importing the same session again (the same facts) is not an error but a no-op.
 */
export class SessionExistsError extends TurnlogError {
  static isInstance = isTurnlogErrorNamed<SessionExistsError>('SessionExistsError');
  readonly sessionId: string;

  constructor(options: TurnlogErrorOptions & { sessionId: string }) {
    super(options);
    this.name = 'SessionExistsError';
    this.sessionId = options.sessionId;
  }
}

/**
 * A session archive (JSON Lines, `turnlog.session-archive/1`) that cannot be read: not JSON, an
 * unknown format version, a fact out of place, a log that breaks a rule every store keeps.
 * Nothing of it was imported.
 */
export class ArchiveFormatError extends TurnlogError {
  static isInstance = isTurnlogErrorNamed<ArchiveFormatError>('ArchiveFormatError');
  /** The archive's file, when it was read from one. */
  readonly file: string | undefined;
  /** The 1-based line at fault, when one is. */
  readonly line: number | undefined;

  constructor(options: TurnlogErrorOptions & { file: string | undefined; line?: number }) {
    super(options);
    this.name = 'ArchiveFormatError';
    this.file = options.file;
    this.line = options.line;
  }
}
