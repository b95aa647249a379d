import {
  isTurnlogErrorNamed,
  TurnlogError,
  type TurnlogErrorOptions,
} from '../../events/turnlog-error.ts';

/**
 * `postgresStore` could not open its schema: the `pg` package is missing, the database refused
 * the connection or the `CREATE`, or the schema was written by a newer turnlog. Every call on
 * the store rejects with it until the cause is fixed (the next call tries again).
 */
export class StoreOpenError extends TurnlogError {
  static isInstance = isTurnlogErrorNamed<StoreOpenError>('StoreOpenError');
  /** The schema the store was opening. */
  readonly schema: string;

  constructor(options: TurnlogErrorOptions & { schema: string }) {
    super(options);
    this.name = 'StoreOpenError';
    this.schema = options.schema;
  }
}

/**
 * A `postgresStore` call met the database unavailable: the connection was refused, cut or timed
 * out (`timeouts`), or the server ended the session. Every method but `append` (whose failure is
 * a `StoreWriteError`) rejects with it instead of node-postgres's own error, which is its
 * `cause`. `mayBeRecorded` says whether the call may have changed something before the failure
 * (a write whose COMMIT was not confirmed); `retrySafe` whether calling again with the same
 * arguments is safe (true for every method of this store: reads change nothing, and each write is
 * idempotent or refused when repeated, e.g. a request posted twice under one id is one request).
 */
export class StoreUnavailableError extends TurnlogError {
  static isInstance = isTurnlogErrorNamed<StoreUnavailableError>('StoreUnavailableError');
  /** The store method that failed, e.g. `postToInbox`. */
  readonly method: string;
  /** True when the call may have written something before the database stopped answering. */
  readonly mayBeRecorded: boolean;
  /** True when the same call may simply be made again once the database is back. */
  readonly retrySafe: boolean;

  constructor(
    options: TurnlogErrorOptions & { method: string; mayBeRecorded: boolean; retrySafe: boolean },
  ) {
    super(options);
    this.name = 'StoreUnavailableError';
    this.method = options.method;
    this.mayBeRecorded = options.mayBeRecorded;
    this.retrySafe = options.retrySafe;
  }
}
