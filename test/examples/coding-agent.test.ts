import { spawnSync } from 'node:child_process';
import { cpSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Fact } from '../../events/facts.ts';
import { lowdbStore } from '../../store/folder/lowdb-store.ts';
import {
  expectDocumentedOutput,
  repoRoot,
  runExample,
  startExample,
  tempDir,
} from './example-process.ts';

const fixedLoop =
  '  for (let index = 0; index < numbers.length; index += 1) total += numbers[index];';

/** The one session the agent logged under `dir`, read after the agent exited. */
async function loggedFacts(dir: string): Promise<Fact[]> {
  const store = lowdbStore({ dir: path.join(dir, 'coding-agent', 'log') });
  try {
    const sessions = await store.sessions();
    expect(sessions).toHaveLength(1);
    return await store.read(sessions[0] as string);
  } finally {
    await store.close();
  }
}

const started = (facts: Fact[], name: string) =>
  facts.filter((fact) => fact.type === 'tool.started' && fact.name === name).length;

/** `node --test` in the agent's working copy, as a person would check it afterwards. */
function testsPass(dir: string): boolean {
  const cwd = path.join(dir, 'coding-agent', 'workspace');
  return spawnSync(process.execPath, ['--test'], { cwd, encoding: 'utf8' }).status === 0;
}

/**
 * A copy of the example project whose tests block while a file named `hold` exists in the
 * working copy, so a signal sent once `→ runCommand` is printed lands mid-command.
 */
function holdingProject(): string {
  const project = path.join(tempDir(), 'project');
  cpSync(path.join(repoRoot, 'examples/coding-agent-project'), project, { recursive: true });
  writeFileSync(path.join(project, 'hold'), '');
  writeFileSync(
    path.join(project, 'hold.test.js'),
    [
      "import { existsSync, watch } from 'node:fs';",
      "import { test } from 'node:test';",
      "test('waits while hold exists', () => new Promise((resolve) => {",
      "  const watcher = watch('.', () => { if (!existsSync('hold')) resolve(watcher.close()); });",
      "  if (!existsSync('hold')) resolve(watcher.close());",
      '}));',
    ].join('\n'),
  );
  return project;
}

describe('examples/coding-agent.ts', () => {
  it('fixes the failing test offline with every prompt answered y through stdin', async () => {
    const dir = tempDir();
    const run = await runExample('coding-agent', { env: { TURNLOG_DIR: dir }, stdin: 'y\ny\ny\n' });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const workspace = path.join(dir, 'coding-agent', 'workspace');
    expectDocumentedOutput(
      'coding-agent',
      run.stdout.replace(workspace, '.turnlog/coding-agent/workspace'),
    );

    const facts = await loggedFacts(dir);
    expect(started(facts, 'runCommand')).toBe(2);
    expect(started(facts, 'readFile')).toBe(1);
    expect(started(facts, 'writeFile')).toBe(1);
    expect(facts.at(-1)).toMatchObject({ type: 'run.ended', status: 'completed' });
    expect(readFileSync(path.join(dir, 'coding-agent', 'workspace', 'sum.js'), 'utf8')).toContain(
      fixedLoop,
    );
    expect(testsPass(dir)).toBe(true);
    // The template itself is untouched.
    expect(
      readFileSync(path.join(repoRoot, 'examples/coding-agent-project/sum.js'), 'utf8'),
    ).toContain('let index = 1;');
  });

  it('leaves the run parked when stdin ends before an answer, and takes a no on the next start', async () => {
    const env = { TURNLOG_DIR: tempDir() };
    const first = await runExample('coding-agent', { env, stdin: 'y\n' });
    expect(first.code).toBe(0);
    expect(first.stdout.trimEnd().split('\n').slice(-2)).toEqual([
      'Allow writeFile: sum.js (183 characters)? [y/n] ',
      'No answer on stdin: the run stays parked in the log. Run the agent again to answer.',
    ]);

    const second = await runExample('coding-agent', { env, stdin: 'n\n' });
    expect(second.stderr).toBe('');
    expect(second.code).toBe(0);
    expect(second.stdout).toContain('  status: parked, waiting for you\n');
    expect(second.stdout.trimEnd().split('\n').slice(-5)).toEqual([
      'Allow writeFile: sum.js (183 characters)? [y/n] n',
      '← denied: This call was denied by the user; it was not run. Do not repeat it unchanged.',
      'Understood, I will leave sum.js as it is. The fix is to start its loop at index 0.',
      '',
      'run completed (end_turn) after 4 steps.',
    ]);
    const facts = await loggedFacts(env.TURNLOG_DIR);
    expect(started(facts, 'writeFile')).toBe(0);
    expect(testsPass(env.TURNLOG_DIR)).toBe(false);
  });

  it('stops cleanly on Ctrl-C at the write prompt: the run ends aborted and sum.js is unchanged', async () => {
    const dir = tempDir();
    const agent = startExample('coding-agent', { env: { TURNLOG_DIR: dir } });
    await agent.next('Allow runCommand: node --test? [y/n] ');
    agent.answer('y');
    await agent.next('Allow writeFile: sum.js (183 characters)? [y/n] ');
    agent.child.kill('SIGINT');
    const run = await agent.exited;
    expect(run.stderr).toBe('');
    expect(run.code).toBe(130);
    expect(run.stdout).toContain('\nstopping the run (Ctrl-C)…\n');
    expect(run.stdout).toContain('← cancelled: This call was cancelled; it was not run.');
    expect(run.stdout.trimEnd().split('\n').at(-1)).toBe(
      'run aborted (stop_requested) after 3 steps.',
    );
    const facts = await loggedFacts(dir);
    expect(facts.filter((fact) => fact.type === 'run.stop.requested')).toHaveLength(1);
    expect(facts.at(-1)).toMatchObject({ type: 'run.ended', status: 'aborted' });
    expect(started(facts, 'writeFile')).toBe(0);
    expect(testsPass(dir)).toBe(false);
  });

  it('stops cleanly on Ctrl-C while a command runs: the command is killed and the run ends aborted', async () => {
    const env = { TURNLOG_DIR: tempDir(), CODING_AGENT_PROJECT: holdingProject() };
    const agent = startExample('coding-agent', { env });
    await agent.next('Allow runCommand: node --test? [y/n] ');
    agent.answer('y');
    await agent.next('→ runCommand: node --test');
    agent.child.kill('SIGINT');
    const run = await agent.exited;
    expect(run.stderr).toBe('');
    expect(run.code).toBe(130);
    expect(run.stdout.trimEnd().split('\n').slice(-4)).toEqual([
      'stopping the run (Ctrl-C)…',
      '← cancelled: The run was stopped while this call was running; the tool ended with: the command was killed because the run was stopped. It may have partly run; inspect the current state before retrying.',
      '',
      'run aborted (stop_requested) after 1 step.',
    ]);
    const facts = await loggedFacts(env.TURNLOG_DIR);
    expect(facts.at(-1)).toMatchObject({ type: 'run.ended', status: 'aborted' });
  });

  it('recovers a run killed at the write prompt and asks again, as documented', async () => {
    const env = { TURNLOG_DIR: tempDir() };
    const first = startExample('coding-agent', { env });
    await first.next('Allow runCommand: node --test? [y/n] ');
    first.answer('y');
    await first.next('Allow writeFile: sum.js (183 characters)? [y/n] ');
    first.child.kill('SIGKILL');
    await first.exited;

    const second = await runExample('coding-agent', { env, stdin: 'y\ny\n' });
    expect(second.stderr).toBe('');
    expect(second.code).toBe(0);
    expectDocumentedOutput('coding-agent-recovered', second.stdout);
    const facts = await loggedFacts(env.TURNLOG_DIR);
    expect(started(facts, 'writeFile')).toBe(1);
    expect(facts.filter((fact) => fact.type === 'tool.permission.requested')).toHaveLength(3);
  });

  it('recovers after SIGKILL while a command runs and at a permission prompt, writing the fix once', async () => {
    const dir = tempDir();
    const project = holdingProject();
    const env = { TURNLOG_DIR: dir, CODING_AGENT_PROJECT: project };

    const first = startExample('coding-agent', { env });
    await first.next('Allow runCommand: node --test? [y/n] ');
    first.answer('y');
    await first.next('→ runCommand: node --test');
    first.child.kill('SIGKILL');
    expect((await first.exited).signal).toBe('SIGKILL');
    // The orphaned test run may finish now; its outcome stays unknown to the agent.
    rmSync(path.join(dir, 'coding-agent', 'workspace', 'hold'));

    const second = startExample('coding-agent', { env });
    const report = await second.next('abort the run? [r/a] ');
    expect(report).toContain('  it was interrupted in: settlingTools.running\n');
    expect(report).toContain('  indeterminate calls: call_2 (runCommand)\n');
    expect(report).toContain('  pending decisions: call_2 runCommand (indeterminate)\n');
    expect(report).toContain('  status: parked, waiting for you\n');
    expect(report).not.toContain('workspace: copied');
    second.answer('r');
    await second.next(
      "I can't tell whether that test run finished, so I will run the tests again.",
    );
    await second.next('Allow runCommand: node --test? [y/n] ');
    second.answer('y');
    await second.next('Allow writeFile: sum.js (183 characters)? [y/n] ');
    second.child.kill('SIGKILL');
    expectDocumentedOutput('coding-agent-indeterminate', (await second.exited).stdout, {
      part: true,
    });

    const third = startExample('coding-agent', { env });
    const parked = await third.next('Allow writeFile: sum.js (183 characters)? [y/n] ');
    expect(parked).toContain('  it was interrupted in: awaitingPermission\n');
    expect(parked).toContain(
      '  tools settled before: runCommand (unknown), runCommand (success), readFile (success)\n',
    );
    expect(parked).toContain('  indeterminate calls: none\n');
    expect(parked).toContain('  pending decisions: call_8 writeFile (permission)\n');
    third.answer('y');
    await third.next('Allow runCommand: node --test? [y/n] ');
    third.answer('y');
    const end = await third.exited;
    expect(end.stderr).toBe('');
    expect(end.code).toBe(0);
    expect(end.stdout).toContain('All tests pass now.');
    expect(end.stdout).toContain('run completed (end_turn) after 6 steps.');

    const facts = await loggedFacts(dir);
    expect(started(facts, 'writeFile')).toBe(1);
    expect(started(facts, 'runCommand')).toBe(3);
    expect(facts.filter((fact) => fact.type === 'tool.indeterminate')).toHaveLength(1);
    expect(facts.filter((fact) => fact.type === 'run.recovered')).toHaveLength(2);
    expect(facts.filter((fact) => fact.type === 'run.ended')).toEqual([
      expect.objectContaining({ status: 'completed', reason: 'end_turn' }),
    ]);
    expect(readFileSync(path.join(dir, 'coding-agent', 'workspace', 'sum.js'), 'utf8')).toContain(
      fixedLoop,
    );
    expect(testsPass(dir)).toBe(true);
  });
});
