import { isTurnlogErrorNamed, TurnlogError, type TurnlogErrorOptions } from './turnlog-error.ts';

/** A projection was given facts it cannot answer for (for example several runs, no `runId`). */
export class ProjectionInputError extends TurnlogError {
  static isInstance = isTurnlogErrorNamed<ProjectionInputError>('ProjectionInputError');
  /** The projection that refused its input, e.g. `classifyTerminal`. */
  readonly projection: string;

  constructor(options: TurnlogErrorOptions & { projection: string }) {
    super(options);
    this.name = 'ProjectionInputError';
    this.projection = options.projection;
  }
}
