import { existsSync } from 'node:fs';
import type { EventStore } from '../store/event-store.ts';
import { lowdbStore } from '../store/folder/lowdb-store.ts';
import { postgresStore } from '../store/postgres/postgres-store.ts';
import type { SessionRetention } from '../store/session-retention.ts';
import { CliError } from './cli-error.ts';
import type { OptionValue } from './command-definition.ts';

/** Which store the CLI opens, in words and as options. */
export type StoreChoice =
  | { kind: 'folder'; dir: string }
  | { kind: 'postgres'; connectionString: string; schema: string };

/**
 * The store the options select: `--dir` or `--database-url` as given (not both); else
 * `DATABASE_URL` from the environment; else `TURNLOG_DIR`; else `.turnlog`, the default of
 * `createRuntime`. The same variables the examples read, so the CLI finds their sessions.
 */
export function chooseStore(
  options: Readonly<Record<string, OptionValue | undefined>>,
  explicit: ReadonlySet<string>,
): StoreChoice {
  if (explicit.has('dir') && explicit.has('database-url')) {
    throw new CliError({
      message:
        'turnlog: give --dir (the folder store) or --database-url (PostgreSQL), not both; a runtime uses one store',
      exit: 'usage',
    });
  }
  const url = text(options['database-url']);
  const dir = text(options.dir);
  const schema = text(options.schema) ?? 'turnlog';
  if (explicit.has('dir') && dir !== undefined) return { kind: 'folder', dir };
  if (url !== undefined) return { kind: 'postgres', connectionString: url, schema };
  return { kind: 'folder', dir: dir ?? '.turnlog' };
}

/**
 * Opens the chosen store (a folder store takes the folder's lock until it is closed). A folder
 * that does not exist is an error, not a new empty store: a mistyped --dir must not look like a
 * store without sessions.
 */
export function openStore(choice: StoreChoice): EventStore & SessionRetention {
  if (choice.kind === 'folder' && !existsSync(choice.dir)) {
    throw new CliError({
      message: `turnlog: there is no store folder ${choice.dir}; give the folder your runtime's lowdbStore uses (--dir or TURNLOG_DIR), or --database-url for PostgreSQL`,
      exit: 'store',
    });
  }
  return choice.kind === 'folder'
    ? lowdbStore({ dir: choice.dir })
    : postgresStore({ connectionString: choice.connectionString, schema: choice.schema });
}

/** The store in words, for notes: `folder .turnlog`, `postgres schema turnlog`. */
export function describeStore(choice: StoreChoice): string {
  return choice.kind === 'folder' ? `folder ${choice.dir}` : `postgres schema ${choice.schema}`;
}

function text(value: OptionValue | undefined): string | undefined {
  return typeof value === 'string' ? value : undefined;
}
