import { CliError } from './cli-error.ts';
import type { CommandDefinition, OptionDefinition, OptionValue } from './command-definition.ts';

/** Options every command takes. */
export const globalOptions: readonly OptionDefinition[] = [
  { name: 'json', description: 'print the result as JSON (for scripts) instead of text' },
  { name: 'no-progress', description: 'no progress on stderr' },
  { name: 'help', description: 'show this help' },
];

/** Where the sessions are: a runtime's store (README, "Operating turnlog"). */
export const storeOptions: readonly OptionDefinition[] = [
  {
    name: 'dir',
    value: 'DIR',
    description: 'the folder store (lowdbStore) in DIR; one process at a time holds it',
    env: 'TURNLOG_DIR',
  },
  {
    name: 'database-url',
    value: 'URL',
    description:
      'the PostgreSQL store (postgresStore) at URL; wins over TURNLOG_DIR from the environment',
    env: 'DATABASE_URL',
  },
  {
    name: 'schema',
    value: 'NAME',
    description: "the PostgreSQL store's schema",
    env: 'TURNLOG_SCHEMA',
    default: 'turnlog',
  },
];

/** The runtime a command acts or compares with. */
export const runtimeOption: OptionDefinition = {
  name: 'runtime',
  value: 'FILE',
  description:
    'a module whose default export is createRuntime options, or a function returning them (its store is not used)',
  env: 'TURNLOG_RUNTIME',
};

/** A command line, parsed: help to show, or a command to run with its arguments and options. */
export type ParsedCommandLine =
  | { kind: 'help'; command: CommandDefinition | undefined }
  | {
      kind: 'run';
      command: CommandDefinition;
      args: Record<string, string | undefined>;
      options: Record<string, OptionValue | undefined>;
      /** The options given on the command line (not from the environment or a default). */
      explicit: ReadonlySet<string>;
    };

/** Every option a command takes: its own, the shared groups it uses, then the global ones. */
export function optionsOf(command: CommandDefinition): OptionDefinition[] {
  return [
    ...command.options,
    ...(command.uses.store ? storeOptions : []),
    ...(command.uses.runtime === 'none' ? [] : [runtimeOption]),
    ...globalOptions,
  ];
}

/**
 * Parses `turnlog <command> [args] [--options]` against the definitions: unknown commands and
 * options, a missing value or argument, and a value outside its choices are `CliError`s with
 * exit status `usage`. Options come from the command line, then their `env`, then their default.
 */
export function parseCommandLine(
  argv: readonly string[],
  commands: readonly CommandDefinition[],
  env: Readonly<Record<string, string | undefined>>,
): ParsedCommandLine {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    const topic = name === 'help' ? rest[0] : undefined;
    return {
      kind: 'help',
      command: topic === undefined ? undefined : commandNamed(topic, commands),
    };
  }
  const command = commandNamed(name, commands);
  const definitions = optionsOf(command);
  const positional: string[] = [];
  const given: Record<string, OptionValue> = {};
  for (let index = 0; index < rest.length; index += 1) {
    const word = rest[index] as string;
    if (word === '-h') return { kind: 'help', command };
    if (!word.startsWith('--') || word === '--') {
      positional.push(word);
      continue;
    }
    const [key, inline] = splitOption(word);
    const option = definitions.find((definition) => definition.name === key);
    if (option === undefined) throw usage(`${command.name}: unknown option --${key}`, command);
    if (option.value === undefined) {
      if (inline !== undefined) throw usage(`${command.name}: --${key} takes no value`, command);
      given[key] = true;
      continue;
    }
    const value = inline ?? rest[++index];
    if (value === undefined || (inline === undefined && value.startsWith('--'))) {
      throw usage(`${command.name}: --${key} needs a value (${option.value})`, command);
    }
    given[key] = optionValue(option, value, command);
  }
  if (given.help === true) return { kind: 'help', command };
  return {
    kind: 'run',
    command,
    args: argumentsOf(command, positional),
    options: withDefaults(definitions, given, env, command),
    explicit: new Set(Object.keys(given)),
  };
}

function commandNamed(name: string, commands: readonly CommandDefinition[]): CommandDefinition {
  const command = commands.find((candidate) => candidate.name === name);
  if (command !== undefined) return command;
  throw new CliError({
    message: `turnlog: unknown command ${name}; the commands are ${commands.map((known) => known.name).join(', ')} (turnlog --help)`,
    exit: 'usage',
  });
}

function splitOption(word: string): [string, string | undefined] {
  const equals = word.indexOf('=');
  return equals === -1
    ? [word.slice(2), undefined]
    : [word.slice(2, equals), word.slice(equals + 1)];
}

function optionValue(
  option: OptionDefinition,
  value: string,
  command: CommandDefinition,
): OptionValue {
  const values = option.list === true ? value.split(',').filter((item) => item !== '') : [value];
  for (const item of values) {
    if (option.choices !== undefined && !option.choices.includes(item)) {
      throw usage(
        `${command.name}: --${option.name} ${item} is not one of ${option.choices.join(', ')}`,
        command,
      );
    }
  }
  return option.list === true ? values : value;
}

function argumentsOf(
  command: CommandDefinition,
  positional: readonly string[],
): Record<string, string | undefined> {
  if (positional.length > command.args.length) {
    throw usage(`${command.name}: unexpected argument ${positional[command.args.length]}`, command);
  }
  const args: Record<string, string | undefined> = {};
  command.args.forEach((argument, index) => {
    const value = positional[index];
    if (value === undefined && argument.optional !== true) {
      throw usage(`${command.name}: missing ${argument.name}`, command);
    }
    if (
      value !== undefined &&
      argument.choices !== undefined &&
      !argument.choices.includes(value)
    ) {
      throw usage(
        `${command.name}: ${argument.name} must be one of ${argument.choices.join(', ')}, got ${value}`,
        command,
      );
    }
    args[argument.name] = value;
  });
  return args;
}

function withDefaults(
  definitions: readonly OptionDefinition[],
  given: Record<string, OptionValue>,
  env: Readonly<Record<string, string | undefined>>,
  command: CommandDefinition,
): Record<string, OptionValue | undefined> {
  const options: Record<string, OptionValue | undefined> = {};
  for (const option of definitions) {
    const fromEnv = option.env === undefined ? undefined : env[option.env];
    const raw = given[option.name] ?? (fromEnv === '' ? undefined : fromEnv) ?? option.default;
    options[option.name] =
      typeof raw === 'string' && given[option.name] === undefined
        ? optionValue(option, raw, command)
        : raw;
  }
  return options;
}

function usage(message: string, command: CommandDefinition): CliError {
  return new CliError({
    message: `turnlog ${message} (turnlog ${command.name} --help)`,
    exit: 'usage',
  });
}
