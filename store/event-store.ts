import type { Fact, NewFact, PartialSnapshot } from '../events/facts.ts';
import {
  isTurnlogErrorNamed,
  TurnlogError,
  type TurnlogErrorOptions,
} from '../events/turnlog-error.ts';

/**
 * The durable event log's contract. A store keeps, per session, facts in `seq` order
 * (from 1, gapless, assigned at append) and never returns a torn one.
 */
export interface EventStore {
  /**
   * Appends facts to a session, in order, assigning `seq`. A fact whose `id` is already stored
   * is skipped (a no-op, so a retried append is safe). With `expectedSeq`, the append only
   * happens when the session's last `seq` equals it; otherwise it throws `ConcurrencyError`.
   * A fact for a run that already has `run.ended` throws `RunSealedError`.
   * Resolves once the new facts are durable (as durable as the store promises).
   */
  append(
    sessionId: string,
    facts: readonly NewFact[],
    options?: AppendOptions,
  ): Promise<AppendResult>;
  /** The session's facts with `seq >= fromSeq` (default 1), in `seq` order. */
  read(sessionId: string, options?: { fromSeq?: number }): Promise<Fact[]>;
  /**
   * Calls `listener` with each fact appended to the session after this call, in `seq` order,
   * once each. Returns the unsubscribe function. It follows the session id: when the session is
   * purged (`purgeSessions`) and started again under the same id, the listener gets the new
   * session's facts from seq 1 on, whichever process purged it.
   */
  subscribe(sessionId: string, listener: (fact: Fact) => void): () => void;
  /**
   * Runs that have `run.started` and no `run.ended`, across all sessions. A session the store
   * cannot read does not make this throw: it is left out and reported by `findings()`.
   */
  openRuns(): Promise<OpenRun[]>;
  /**
   * What the store found wrong, or cut, while opening and reading sessions since it was opened:
   * a torn unacknowledged tail it removed, a session it cannot read. Never hidden, never
   * repaired silently; `runtime.recover()` reports these sessions as damaged.
   */
  findings(): Promise<StoreFinding[]>;
  /** Ids of every session with at least one fact. */
  sessions(): Promise<string[]>;
  /**
   * Overwrites the session's partial snapshot slot (the streamed output of the step in
   * flight, bounded in size), for display after a crash. Never replayed to a model.
   */
  savePartial(sessionId: string, partial: PartialSnapshot): Promise<void>;
  /** The session's partial snapshot, if one was saved and not cleared. */
  loadPartial(sessionId: string): Promise<PartialSnapshot | undefined>;
  /** Removes the session's partial snapshot (the step it described became a fact). */
  clearPartial(sessionId: string): Promise<void>;
  /** Flushes pending writes and releases the store (its lock, for a file store). */
  close(): Promise<void>;
}

export interface AppendOptions {
  /** The `seq` of the last fact the caller saw in this session (0 for an empty session). */
  expectedSeq?: number;
}

export interface AppendResult {
  /** The facts this call stored, with their `seq` (known ids are not in it). */
  appended: Fact[];
  /** The session's last `seq` after the append. */
  lastSeq: number;
}

export interface OpenRun {
  sessionId: string;
  turnId: string;
  runId: string;
}

/** Something a store noticed in a session's stored form, reported instead of hidden. */
export interface StoreFinding {
  /** The session it concerns (`undefined` when even its id cannot be read). */
  sessionId: string | undefined;
  /**
   * - `torn-tail-cut`: a last record without its end (a write the store never acknowledged) was
   *   removed when the session was opened; nothing acknowledged was lost.
   * - `unreadable`: the session cannot be read as a valid log; it is left as it is.
   */
  kind: 'torn-tail-cut' | 'unreadable';
  /** The file (or table) it was found in, when the store has files. */
  file: string | undefined;
  /** The 1-based line in `file`, when it is a line-oriented file. */
  line: number | undefined;
  /** What was found and what to do, in words. */
  message: string;
}

/** `append` with an `expectedSeq` that is no longer the session's last `seq`. */
export class ConcurrencyError extends TurnlogError {
  static isInstance = isTurnlogErrorNamed<ConcurrencyError>('ConcurrencyError');
  readonly sessionId: string;
  readonly expectedSeq: number;
  readonly actualSeq: number;

  constructor(
    options: TurnlogErrorOptions & { sessionId: string; expectedSeq: number; actualSeq: number },
  ) {
    super(options);
    this.name = 'ConcurrencyError';
    this.sessionId = options.sessionId;
    this.expectedSeq = options.expectedSeq;
    this.actualSeq = options.actualSeq;
  }
}

/** `append` of a new fact to a run that already ended (I7). */
export class RunSealedError extends TurnlogError {
  static isInstance = isTurnlogErrorNamed<RunSealedError>('RunSealedError');
  readonly sessionId: string;
  readonly runId: string;

  constructor(options: TurnlogErrorOptions & { sessionId: string; runId: string }) {
    super(options);
    this.name = 'RunSealedError';
    this.sessionId = options.sessionId;
    this.runId = options.runId;
  }
}

/** A stored file or document that cannot be read as a valid log (never treated as empty). */
export class StoreCorruptionError extends TurnlogError {
  static isInstance = isTurnlogErrorNamed<StoreCorruptionError>('StoreCorruptionError');
  readonly file: string;
  /** The 1-based line of `file` at fault, for a line-oriented file. */
  readonly line: number | undefined;

  constructor(options: TurnlogErrorOptions & { file: string; line?: number }) {
    super(options);
    this.name = 'StoreCorruptionError';
    this.file = options.file;
    this.line = options.line;
  }
}

/**
 * The store cannot use its folder or a file in it: a permission refused, a file where a folder
 * should be, a read-only or full file system. Names the path and the system's reason (`code`).
 */
export class StoreError extends TurnlogError {
  static isInstance = isTurnlogErrorNamed<StoreError>('StoreError');
  readonly path: string;
  /** The system error code (`EACCES`, `ENOTDIR`, `EIO`, …), when there is one. */
  readonly code: string | undefined;
  /**
   * The one session that cannot be read, when the error is that session's alone (a file of its
   * folder): `recover()` reports it `damaged` and goes on with the others. `undefined`: the
   * store's own folder, which concerns every session.
   */
  readonly sessionId: string | undefined;

  constructor(
    options: TurnlogErrorOptions & { path: string; code: string | undefined; sessionId?: string },
  ) {
    super(options);
    this.name = 'StoreError';
    this.path = options.path;
    this.code = options.code;
    this.sessionId = options.sessionId;
  }
}

/** A store directory already opened by another live process. */
export class StoreLockedError extends TurnlogError {
  static isInstance = isTurnlogErrorNamed<StoreLockedError>('StoreLockedError');
  readonly dir: string;
  readonly pid: number | undefined;

  constructor(options: TurnlogErrorOptions & { dir: string; pid: number | undefined }) {
    super(options);
    this.name = 'StoreLockedError';
    this.dir = options.dir;
    this.pid = options.pid;
  }
}

/** Any use of a store after `close()`. */
export class StoreClosedError extends TurnlogError {
  static isInstance = isTurnlogErrorNamed<StoreClosedError>('StoreClosedError');

  constructor(options: TurnlogErrorOptions) {
    super(options);
    this.name = 'StoreClosedError';
  }
}

/**
 * A store call with input it cannot accept: a fact that is not plain JSON or lacks its
 * envelope, a fact of another session, a bad option. Nothing of that call was stored (I11).
 */
export class StoreInputError extends TurnlogError {
  static isInstance = isTurnlogErrorNamed<StoreInputError>('StoreInputError');
  readonly sessionId: string | undefined;
  /** Position of the offending fact in the `append` call, when a fact was the problem. */
  readonly factIndex: number | undefined;

  constructor(
    options: TurnlogErrorOptions & { sessionId: string | undefined; factIndex?: number },
  ) {
    super(options);
    this.name = 'StoreInputError';
    this.sessionId = options.sessionId;
    this.factIndex = options.factIndex;
  }
}

/**
 * A durable write of the store failed (disk full, permissions, I/O error). The appends waiting
 * on it were not acknowledged: each may or may not be stored. Read the session and retry with
 * the same fact ids (a repeat is a no-op).
 */
export class StoreWriteError extends TurnlogError {
  static isInstance = isTurnlogErrorNamed<StoreWriteError>('StoreWriteError');
  readonly sessionId: string;
  readonly file: string | undefined;

  constructor(options: TurnlogErrorOptions & { sessionId: string; file: string | undefined }) {
    super(options);
    this.name = 'StoreWriteError';
    this.sessionId = options.sessionId;
    this.file = options.file;
  }
}
