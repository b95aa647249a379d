import {
  isTurnlogErrorNamed,
  TurnlogError,
  type TurnlogErrorOptions,
} from '../events/turnlog-error.ts';
import { type ExitName, exitCodes } from './exit-codes.ts';

/**
 * Something the `turnlog` CLI reports and exits with: a wrong command line, a session that is not
 * there, a `--runtime` module it cannot use. `exit` names the status (`exitCodes`).
 */
export class CliError extends TurnlogError {
  static isInstance = isTurnlogErrorNamed<CliError>('CliError');
  readonly exit: ExitName;

  constructor(options: TurnlogErrorOptions & { exit: ExitName }) {
    super(options);
    this.name = 'CliError';
    this.exit = options.exit;
  }

  /** The process exit status. */
  get exitCode(): number {
    return exitCodes[this.exit].code;
  }
}
