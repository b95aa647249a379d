import type { CommandDefinition } from './command-definition.ts';
import { checkCommand } from './commands/check.ts';
import { decideCommand, stopCommand } from './commands/decide.ts';
import { exportCommand } from './commands/export.ts';
import { importCommand } from './commands/import.ts';
import { purgeCommand } from './commands/purge.ts';
import { replayCommand } from './commands/replay.ts';
import { sessionsCommand } from './commands/sessions.ts';
import { showCommand } from './commands/show.ts';
import { tailCommand } from './commands/tail.ts';

/**
 * Every command of the `turnlog` CLI, in the order `--help` lists them. A command is one
 * `CommandDefinition` in `cli/commands/`; add it here and `--help`, the parser and the README's
 * table follow.
 */
export const commands: readonly CommandDefinition[] = [
  sessionsCommand,
  showCommand,
  tailCommand,
  decideCommand,
  stopCommand,
  checkCommand,
  replayCommand,
  purgeCommand,
  exportCommand,
  importCommand,
];
