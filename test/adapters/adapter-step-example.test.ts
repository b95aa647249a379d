import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

it('runs examples/adapter-step.ts offline to the scripted reply', () => {
  const root = fileURLToPath(new URL('../..', import.meta.url));
  const run = spawnSync(process.execPath, ['examples/adapter-step.ts'], {
    cwd: root,
    encoding: 'utf8',
  });
  expect(run.stderr).toBe('');
  expect(run.status).toBe(0);
  const lines = run.stdout.trim().split('\n');
  expect(lines).toContain("call readFile { path: 'notes.md' } proof: raw-bytes");
  expect(lines.slice(-2)).toEqual([
    'reply notes.md says: buy milk.',
    'second step ended with step.completed',
  ]);
});
