import {
  isTurnlogErrorNamed,
  TurnlogError,
  type TurnlogErrorOptions,
} from './events/turnlog-error.ts';

/** `send()` to a session whose last run has not ended. */
export class SessionBusyError extends TurnlogError {
  static isInstance = isTurnlogErrorNamed<SessionBusyError>('SessionBusyError');
  readonly sessionId: string;
  readonly runId: string;

  constructor(options: TurnlogErrorOptions & { sessionId: string; runId: string }) {
    super(options);
    this.name = 'SessionBusyError';
    this.sessionId = options.sessionId;
    this.runId = options.runId;
  }
}

/** `decide()`, `steer()` or `stop()` for a session with no unfinished run. */
export class NoActiveRunError extends TurnlogError {
  static isInstance = isTurnlogErrorNamed<NoActiveRunError>('NoActiveRunError');
  readonly sessionId: string;

  constructor(options: TurnlogErrorOptions & { sessionId: string }) {
    super(options);
    this.name = 'NoActiveRunError';
    this.sessionId = options.sessionId;
  }
}

/** An argument or option that is not what the API takes. */
export class InvalidArgumentError extends TurnlogError {
  static isInstance = isTurnlogErrorNamed<InvalidArgumentError>('InvalidArgumentError');
  readonly argument: string;

  constructor(options: TurnlogErrorOptions & { argument: string }) {
    super(options);
    this.name = 'InvalidArgumentError';
    this.argument = options.argument;
  }
}

/** Any call after `runtime.close()`. */
export class RuntimeClosedError extends TurnlogError {
  static isInstance = isTurnlogErrorNamed<RuntimeClosedError>('RuntimeClosedError');

  constructor(options: TurnlogErrorOptions) {
    super(options);
    this.name = 'RuntimeClosedError';
  }
}

/**
 * `decide()`, `steer()` or `stop()` for a session whose unfinished run cannot be resumed: its log
 * is damaged (a file that cannot be read, facts that break the log's rules, states the turn
 * machine does not reach). Nothing was written; `damage` says what is wrong.
 */
export class DamagedSessionError extends TurnlogError {
  static isInstance = isTurnlogErrorNamed<DamagedSessionError>('DamagedSessionError');
  readonly sessionId: string;
  /** The unfinished run, when the log could be read far enough to name it. */
  readonly runId: string | undefined;
  readonly damage: string[];

  constructor(
    options: TurnlogErrorOptions & {
      sessionId: string;
      runId: string | undefined;
      damage: string[];
    },
  ) {
    super(options);
    this.name = 'DamagedSessionError';
    this.sessionId = options.sessionId;
    this.runId = options.runId;
    this.damage = options.damage;
  }
}
