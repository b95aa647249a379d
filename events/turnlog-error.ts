const marker = Symbol.for('turnlog.error');

/** Options every turnlog error is built from: a message that says what to do, and a cause. */
export interface TurnlogErrorOptions {
  message: string;
  cause?: unknown;
}

/**
 * Base class of every error turnlog throws at its public surface. Each subclass has a stable
 * `name` and a static `isInstance()` that works across two copies of the package (it checks a
 * `Symbol.for` marker and the name, never `instanceof`).
 */
export class TurnlogError extends Error {
  readonly [marker] = true;

  constructor({ message, cause }: TurnlogErrorOptions) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = 'TurnlogError';
  }

  /** True for any turnlog error, from any copy of the package. */
  static isTurnlogError(error: unknown): error is TurnlogError {
    return typeof error === 'object' && error !== null && marker in error;
  }
}

/**
 * Makes the static `isInstance(error)` of a subclass: a turnlog error whose `name` is `name`.
 *
 * @example
 * export class ConcurrencyError extends TurnlogError {
 *   static isInstance = isTurnlogErrorNamed<ConcurrencyError>('ConcurrencyError');
 * }
 */
export function isTurnlogErrorNamed<TError extends TurnlogError>(name: string) {
  return (error: unknown): error is TError =>
    TurnlogError.isTurnlogError(error) && (error as Error).name === name;
}
