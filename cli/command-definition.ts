import type { RuntimeOptions } from '../runtime.ts';
import type { EventStore } from '../store/event-store.ts';
import type { SessionRetention } from '../store/session-retention.ts';
import type { CliOutput } from './cli-output.ts';
import type { ExitName } from './exit-codes.ts';

/**
 * The `turnlog` CLI's one definition: every command, argument and option is declared once, and
 * the parser, `--help` and the README's table all read it. A command is a file in `cli/commands/`
 * exporting one `CommandDefinition`; `cli/commands.ts` lists them.
 */
export interface CommandDefinition {
  /** The word after `turnlog`: `sessions`, `show`, … */
  name: string;
  /** One line for `turnlog --help`. */
  summary: string;
  /** Paragraphs for `turnlog <command> --help`, after the summary. */
  details?: string;
  /** Positional arguments, in order. */
  args: readonly ArgumentDefinition[];
  /** The command's own options (the shared groups come from `uses`). */
  options: readonly OptionDefinition[];
  /**
   * The shared option groups it takes: `store` (`--dir`, `--database-url`, `--schema`) and
   * `runtime` (`--runtime`, required or optional as `runtime` says).
   */
  uses: { store: boolean; runtime: 'required' | 'optional' | 'none' };
  /** Examples for `--help`, each a command line and what it does. */
  examples?: readonly (readonly [string, string])[];
  /** Does the command; resolves to the exit status's name (`ok`, `found`, …). */
  run(context: CommandContext): Promise<ExitName>;
}

/** A positional argument. */
export interface ArgumentDefinition {
  name: string;
  description: string;
  /** The values it may take; anything else is a usage error. */
  choices?: readonly string[];
  /** May be left out (only the last arguments). */
  optional?: boolean;
}

/** An option: `--name VALUE`, or a flag `--name` when it has no `value`. */
export interface OptionDefinition {
  /** Its long name without the dashes, e.g. `database-url`. */
  name: string;
  /** The placeholder of its value in `--help` (`URL`); absent for a flag. */
  value?: string;
  description: string;
  /** The values it may take; with `list`, each of its comma-separated values. */
  choices?: readonly string[];
  /** A comma-separated list (`--status failed,parked`). */
  list?: boolean;
  /** The environment variable read when the option is not given. */
  env?: string;
  /** A default shown in `--help` and used when neither the option nor `env` is given. */
  default?: string;
}

/** What a parsed option holds: a value, a list, or `true` for a flag. */
export type OptionValue = string | readonly string[] | true;

/** What a command runs with: its parsed command line and the process's parts. */
export interface CommandContext {
  /** Positional arguments by name. */
  args: Readonly<Record<string, string | undefined>>;
  /** Options by name (the shared groups' too), after the environment and defaults. */
  options: Readonly<Record<string, OptionValue | undefined>>;
  /** `--json`: one JSON document on stdout (JSON lines for `tail`), nothing else there. */
  json: boolean;
  output: CliOutput;
  /** The store the options select, opened on first call and closed when the command ends. */
  store(): Promise<EventStore & SessionRetention>;
  /** The `--runtime` module's createRuntime options (its `store` is left out: see `store()`). */
  runtimeOptions(): Promise<RuntimeOptions | undefined>;
  /** The clock (ms since the epoch). */
  now(): number;
  /** Aborted on Ctrl-C / SIGTERM: a long command stops and reports what it has. */
  signal: AbortSignal;
}
