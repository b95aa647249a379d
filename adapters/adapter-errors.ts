import { isTurnlogErrorNamed, TurnlogError } from '../events/turnlog-error.ts';

/** `aiSdkAdapter` was given something that is not an AI SDK v3 or v4 language model object. */
export class UnsupportedModelError extends TurnlogError {
  static isInstance = isTurnlogErrorNamed<UnsupportedModelError>('UnsupportedModelError');
  readonly specificationVersion: string | undefined;

  constructor({
    message,
    cause,
    specificationVersion,
  }: {
    message: string;
    cause?: unknown;
    specificationVersion: string | undefined;
  }) {
    super({ message, cause });
    this.name = 'UnsupportedModelError';
    this.specificationVersion = specificationVersion;
  }
}

/** A `scriptedModel` was called more often than its script has steps. */
export class ScriptExhaustedError extends TurnlogError {
  static isInstance = isTurnlogErrorNamed<ScriptExhaustedError>('ScriptExhaustedError');
  /** How many steps the script had. */
  readonly stepCount: number;

  constructor({
    message,
    cause,
    stepCount,
  }: { message: string; cause?: unknown; stepCount: number }) {
    super({ message, cause });
    this.name = 'ScriptExhaustedError';
    this.stepCount = stepCount;
  }
}
