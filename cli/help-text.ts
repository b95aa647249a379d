import type { CommandDefinition, OptionDefinition } from './command-definition.ts';
import { globalOptions, optionsOf, runtimeOption, storeOptions } from './command-line.ts';
import { exitCodes } from './exit-codes.ts';

/** `turnlog --help`: the commands, the shared options, the environment and the exit statuses. */
export function generalHelp(commands: readonly CommandDefinition[]): string {
  const width = Math.max(...commands.map((command) => usageLine(command).length));
  return [
    'turnlog: look at and act on the sessions of a turnlog store',
    '',
    'Usage: turnlog <command> [arguments] [options]',
    '',
    'Commands:',
    ...commands.map((command) => `  ${usageLine(command).padEnd(width)}  ${command.summary}`),
    '',
    'Store options (every command that reads a store):',
    ...optionLines(storeOptions),
    '',
    'Runtime option (check, replay, decide, stop):',
    ...optionLines([runtimeOption]),
    '',
    'Options of every command:',
    ...optionLines(globalOptions),
    '',
    exitStatusText(),
    '',
    'turnlog <command> --help shows a command in full.',
  ].join('\n');
}

/** `turnlog <command> --help`. */
export function commandHelp(command: CommandDefinition): string {
  const lines = [`Usage: turnlog ${usageLine(command)} [options]`, '', command.summary];
  if (command.details !== undefined) lines.push('', command.details);
  if (command.args.length > 0) {
    lines.push('', 'Arguments:');
    const width = Math.max(...command.args.map((argument) => argument.name.length));
    for (const argument of command.args) {
      const choices = argument.choices === undefined ? '' : ` (${argument.choices.join('|')})`;
      lines.push(`  ${argument.name.padEnd(width)}  ${argument.description}${choices}`);
    }
  }
  lines.push('', 'Options:', ...optionLines(optionsOf(command)));
  if (command.examples !== undefined && command.examples.length > 0) {
    lines.push('', 'Examples:');
    for (const [example, what] of command.examples) lines.push(`  ${example}`, `      ${what}`);
  }
  lines.push('', exitStatusText());
  return lines.join('\n');
}

/** `show SESSION`, `decide SESSION CALL allow|deny|unknown`, `sessions`. */
export function usageLine(command: CommandDefinition): string {
  const args = command.args.map((argument) => {
    const shown = argument.choices?.join('|') ?? argument.name;
    return argument.optional === true ? `[${shown}]` : shown;
  });
  return [command.name, ...args].join(' ');
}

function optionLines(options: readonly OptionDefinition[]): string[] {
  const heads = options.map((option) =>
    option.value === undefined ? `--${option.name}` : `--${option.name} ${option.value}`,
  );
  const width = Math.max(...heads.map((head) => head.length));
  return options.map((option, index) => {
    const extras = [
      option.choices === undefined
        ? undefined
        : `${option.list === true ? 'any of' : 'one of'} ${option.choices.join(', ')}`,
      option.env === undefined ? undefined : `env ${option.env}`,
      option.default === undefined ? undefined : `default ${option.default}`,
    ].filter((extra) => extra !== undefined);
    const tail = extras.length === 0 ? '' : ` [${extras.join('; ')}]`;
    return `  ${(heads[index] as string).padEnd(width)}  ${option.description}${tail}`;
  });
}

function exitStatusText(): string {
  return [
    'Exit status:',
    ...Object.values(exitCodes).map(
      ({ code, meaning }) => `  ${String(code).padStart(3)}  ${meaning}`,
    ),
  ].join('\n');
}
