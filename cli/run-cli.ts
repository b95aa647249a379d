import { TurnlogError } from '../events/turnlog-error.ts';
import type { RuntimeOptions } from '../runtime.ts';
import type { EventStore } from '../store/event-store.ts';
import type { SessionRetention } from '../store/session-retention.ts';
import { CliError } from './cli-error.ts';
import { CliOutput, type CliStreams } from './cli-output.ts';
import { chooseStore, openStore } from './cli-store.ts';
import type { CommandContext, CommandDefinition } from './command-definition.ts';
import { parseCommandLine } from './command-line.ts';
import { commands } from './commands.ts';
import { type ExitName, exitCodes } from './exit-codes.ts';
import { commandHelp, generalHelp } from './help-text.ts';
import { loadRuntimeOptions } from './runtime-module.ts';

/** What `runCli` runs in: the command line, the environment, the streams (a test passes its own). */
export interface RunCliOptions extends CliStreams {
  argv: readonly string[];
  env: Readonly<Record<string, string | undefined>>;
  cwd: string;
  /** Aborted on Ctrl-C (the bin wires SIGINT and SIGTERM to it). */
  signal?: AbortSignal;
  now?: () => number;
}

/**
 * Runs one `turnlog` command line and resolves to the exit status (`exitCodes`). Errors are
 * reported on stderr (as `{ "error": … }` on stdout with `--json`), never thrown.
 */
export async function runCli(options: RunCliOptions): Promise<number> {
  const json = options.argv.includes('--json');
  const output = new CliOutput(options, { progress: !options.argv.includes('--no-progress') });
  let store: (EventStore & SessionRetention) | undefined;
  try {
    const parsed = parseCommandLine(options.argv, commands, options.env);
    if (parsed.kind === 'help') {
      output.line(
        parsed.command === undefined ? generalHelp(commands) : commandHelp(parsed.command),
      );
      return exitCodes.ok.code;
    }
    const { command } = parsed;
    const choice = chooseStore(parsed.options, parsed.explicit);
    const runtimeFile = parsed.options.runtime;
    if (command.uses.runtime === 'required' && typeof runtimeFile !== 'string') {
      throw new CliError({
        message: `turnlog ${command.name} needs --runtime FILE (or TURNLOG_RUNTIME): the module of your createRuntime options, so it ${command.name === 'check' ? 'compares with your tools' : 'runs with your tools, model and policy'}`,
        exit: 'usage',
      });
    }
    let runtimeOptions: Promise<RuntimeOptions | undefined> | undefined;
    const context: CommandContext = {
      args: parsed.args,
      options: parsed.options,
      json,
      output,
      store: async () => {
        store ??= openStore(choice);
        return store;
      },
      runtimeOptions: () => {
        runtimeOptions ??=
          typeof runtimeFile === 'string'
            ? loadRuntimeOptions(runtimeFile, options.cwd)
            : Promise.resolve(undefined);
        return runtimeOptions;
      },
      now: options.now ?? Date.now,
      signal: options.signal ?? new AbortController().signal,
    };
    return exitCodes[await command.run(context)].code;
  } catch (error) {
    const exit = exitFor(error, options.signal);
    report(output, json, error, exit);
    return exitCodes[exit].code;
  } finally {
    await store?.close().catch(() => {});
  }
}

/** The exit status an error means. */
export function exitFor(error: unknown, signal: AbortSignal | undefined): ExitName {
  if (CliError.isInstance(error)) return error.exit;
  if (signal?.aborted === true) return 'interrupted';
  if (!TurnlogError.isTurnlogError(error)) return isConnectionError(error) ? 'store' : 'internal';
  switch (error.name) {
    case 'NoActiveRunError':
    case 'UnknownDecisionError':
      return 'notFound';
    case 'DecisionConflictError':
    case 'DecisionMismatchError':
    case 'InvalidDecisionError':
    case 'DamagedSessionError':
    case 'RunLeasedError':
    case 'SessionBusyError':
      return 'refused';
    case 'InvalidArgumentError':
      return 'usage';
    default:
      return error.name.startsWith('Store') ? 'store' : 'internal';
  }
}

/** A database that does not answer (pg's errors are not turnlog's). */
function isConnectionError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return (
    typeof code === 'string' &&
    (/^(ECONNREFUSED|ENOTFOUND|ETIMEDOUT|ECONNRESET|EAI_AGAIN)$/.test(code) ||
      /^(08|28|3D)/.test(code))
  );
}

function report(output: CliOutput, json: boolean, error: unknown, exit: ExitName): void {
  const message = error instanceof Error ? error.message : String(error);
  const name = error instanceof Error ? error.name : 'Error';
  if (json) output.json({ error: { name, message, exit: exitCodes[exit].code } });
  output.note(exit === 'internal' && error instanceof Error ? (error.stack ?? message) : message);
}

/** The definition of a command, by name (for tests and the README's table). */
export function commandNamed(name: string): CommandDefinition | undefined {
  return commands.find((command) => command.name === name);
}
