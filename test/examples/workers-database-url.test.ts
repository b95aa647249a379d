import { expect, it } from 'vitest';
import { runExample } from './example-process.ts';

it('refuses to run without DATABASE_URL, saying what to set, instead of guessing a database', async () => {
  const run = await runExample('workers', { env: { DATABASE_URL: '' } });
  expect(run.code).toBe(2);
  expect(run.stdout).toBe('');
  expect(run.stderr).toBe(
    'examples/workers.ts needs a PostgreSQL: set DATABASE_URL=postgres://user:password@host:5432/database (it creates the schema turnlog_workers_example there, or TURNLOG_EXAMPLE_SCHEMA).\n',
  );
});
