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
