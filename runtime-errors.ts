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
