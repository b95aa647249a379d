import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { expectDocumentedOutput, runExample, tempDir } from './example-process.ts';

it('runs the quickstart offline, printing what README.md shows, with its log in .turnlog/', async () => {
  // No TURNLOG_DIR: the default store location, .turnlog/ in the working directory.
  const cwd = tempDir();
  const run = await runExample('quickstart', { cwd });
  expect(run.stderr).toBe('');
  expect(run.code).toBe(0);
  expectDocumentedOutput('quickstart', run.stdout);
  const sessions = readdirSync(path.join(cwd, '.turnlog', 'sessions'));
  expect(sessions).toHaveLength(1);
  expect(sessions[0]).toMatch(/^quickstart-\d+$/);
  expect(existsSync(path.join(cwd, '.turnlog', 'turnlog.lock'))).toBe(false);
});

it('puts the quickstart log under TURNLOG_DIR when it is set', async () => {
  const cwd = tempDir();
  const dir = path.join(tempDir(), 'elsewhere');
  const run = await runExample('quickstart', { cwd, env: { TURNLOG_DIR: dir } });
  expect(run.code).toBe(0);
  expect(readdirSync(path.join(dir, 'sessions'))).toHaveLength(1);
  expect(existsSync(path.join(cwd, '.turnlog'))).toBe(false);
});
