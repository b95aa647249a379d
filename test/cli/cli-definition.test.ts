import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseCommandLine } from '../../cli/command-line.ts';
import { commands } from '../../cli/commands.ts';
import { exitCodes } from '../../cli/exit-codes.ts';
import { commandHelp } from '../../cli/help-text.ts';

const readme = readFileSync(path.resolve(import.meta.dirname, '../../README.md'), 'utf8');

function marked(name: string): string {
  return readme.slice(readme.indexOf(`<!-- ${name} -->`), readme.indexOf(`<!-- /${name} -->`));
}

describe('the CLI’s one definition', () => {
  it('is what the README’s command table lists, command for command', () => {
    const listed = [...marked('cli-commands').matchAll(/^\| `turnlog (\w+)` \|/gm)].map(
      ([, name]) => name,
    );
    expect(listed).toEqual(commands.map((command) => command.name));
  });

  it('is what the README’s exit status table lists, status for status', () => {
    const listed = [...marked('cli-exit-codes').matchAll(/^\| (\d+) \|/gm)].map(([, code]) =>
      Number(code),
    );
    expect(listed).toEqual(Object.values(exitCodes).map(({ code }) => code));
  });

  it('parses options from the command line, then the environment, then the default', () => {
    const parsed = parseCommandLine(
      ['sessions', '--status=failed,parked', '--dir', 'logs'],
      commands,
      {
        DATABASE_URL: 'postgres://db',
        TURNLOG_SCHEMA: 'ops',
      },
    );
    expect(parsed.kind === 'run' && parsed.options).toMatchObject({
      status: ['failed', 'parked'],
      dir: 'logs',
      'database-url': 'postgres://db',
      schema: 'ops',
    });
    expect(parsed.kind === 'run' && [...parsed.explicit].sort()).toEqual(['dir', 'status']);
    const defaults = parseCommandLine(['tail', 's-1'], commands, {});
    expect(defaults.kind === 'run' && defaults.options).toMatchObject({
      lines: '10',
      schema: 'turnlog',
    });
  });

  it('refuses what it does not define, naming the command’s help', () => {
    expect(() => parseCommandLine(['decide', 's', 'c', 'maybe'], commands, {})).toThrow(
      'turnlog decide: DECISION must be one of allow, deny, unknown, got maybe (turnlog decide --help)',
    );
    expect(() => parseCommandLine(['show'], commands, {})).toThrow('turnlog show: missing SESSION');
    expect(() => parseCommandLine(['show', 's', 'extra'], commands, {})).toThrow(
      'turnlog show: unexpected argument extra',
    );
    expect(() => parseCommandLine(['tail', 's', '--lines'], commands, {})).toThrow(
      'turnlog tail: --lines needs a value (N)',
    );
  });

  it('writes each command’s help from its definition: usage, arguments, options with their sources', () => {
    const decide = commands.find((command) => command.name === 'decide');
    if (decide === undefined) throw new Error('the CLI has no decide command');
    const help = commandHelp(decide);
    expect(help.split('\n')[0]).toBe(
      'Usage: turnlog decide SESSION CALL allow|deny|unknown [options]',
    );
    expect(help).toContain('--runtime FILE');
    expect(help).toContain('[env TURNLOG_RUNTIME]');
    expect(help).toContain('[env TURNLOG_SCHEMA; default turnlog]');
  });
});
