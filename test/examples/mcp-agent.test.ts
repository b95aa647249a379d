import { existsSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { Fact } from '../../events/facts.ts';
import { lowdbStore } from '../../store/folder/lowdb-store.ts';
import { expectDocumentedOutput, runExample, startExample, tempDir } from './example-process.ts';

/** The temp folder the agent printed on its first line; removed when the test finishes. */
function folderOf(stdout: string): string {
  const folder = /^folder: (.+)$/m.exec(stdout)?.[1];
  if (folder === undefined) throw new Error(`no folder line in:\n${stdout}`);
  onTestFinished(() => rmSync(folder, { recursive: true, force: true }));
  return folder;
}

/** Every session the agent logged under `dir`, read after it exited. */
async function loggedSessions(dir: string): Promise<Fact[][]> {
  const store = lowdbStore({ dir: path.join(dir, 'mcp-agent') });
  try {
    const sessions = (await store.sessions()).sort();
    return await Promise.all(sessions.map((session) => store.read(session)));
  } finally {
    await store.close();
  }
}

const started = (facts: Fact[]) =>
  facts.flatMap((fact) => (fact.type === 'tool.started' ? [fact.name] : []));

describe('examples/mcp-agent.ts', () => {
  it('reads without asking, edits after y, and does not write after n, as documented', async () => {
    const dir = tempDir();
    const run = await runExample('mcp-agent', { env: { TURNLOG_DIR: dir }, stdin: 'y\nn\n' });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const folder = folderOf(run.stdout);
    expectDocumentedOutput(
      'mcp-agent',
      run.stdout.replaceAll(folder, '/tmp/turnlog-mcp-agent-XXXXXX'),
    );
    expect(readFileSync(path.join(folder, 'todo.md'), 'utf8')).toBe(
      '- [x] buy milk\n- [ ] call Ana\n',
    );
    expect(existsSync(path.join(folder, 'done.md'))).toBe(false);
    const [facts = []] = await loggedSessions(dir);
    expect(started(facts)).toEqual([
      'fs_list_allowed_directories',
      'fs_list_directory',
      'fs_read_text_file',
      'fs_edit_file',
    ]);
    expect(facts.filter((fact) => fact.type === 'tool.permission.requested')).toHaveLength(2);
  });

  it('stops the run when stdin ends at a prompt', async () => {
    const dir = tempDir();
    const run = await runExample('mcp-agent', { env: { TURNLOG_DIR: dir }, stdin: 'y\n' });
    expect(run.code).toBe(0);
    const folder = folderOf(run.stdout);
    expect(run.stdout.trimEnd().split('\n').slice(-5)).toEqual([
      'Allow fs_write_file done.md (19 characters)? [y/n] ',
      'No answer on stdin: stopping the run.',
      '← cancelled: This call was cancelled; it was not run. The run was stopped before this call ran.',
      '',
      'run aborted (stop_requested) after 5 steps.',
    ]);
    expect(existsSync(path.join(folder, 'done.md'))).toBe(false);
  });

  it('ends a run killed mid-prompt at the next start, whose run then writes both files', async () => {
    const env = { TURNLOG_DIR: tempDir() };
    const first = startExample('mcp-agent', { env });
    await first.next('Allow fs_edit_file todo.md (1 edit)? [y/n] ');
    folderOf(first.stdout());
    first.child.kill('SIGKILL');
    await first.exited;

    const second = await runExample('mcp-agent', { env, stdin: 'y\ny\n' });
    expect(second.code).toBe(0);
    const folder = folderOf(second.stdout);
    expect(second.stdout).toContain(
      'Done: "buy milk" is checked off in todo.md and noted in done.md.',
    );
    expect(readFileSync(path.join(folder, 'done.md'), 'utf8')).toBe('# Done\n\n- buy milk\n');
    const sessions = await loggedSessions(env.TURNLOG_DIR);
    expect(sessions.map((facts) => facts.at(-1))).toEqual([
      expect.objectContaining({ type: 'run.ended', status: 'aborted', reason: 'stop_requested' }),
      expect.objectContaining({ type: 'run.ended', status: 'completed', reason: 'end_turn' }),
    ]);
    expect(sessions.map(started)).toEqual([
      ['fs_list_allowed_directories', 'fs_list_directory', 'fs_read_text_file'],
      [
        'fs_list_allowed_directories',
        'fs_list_directory',
        'fs_read_text_file',
        'fs_edit_file',
        'fs_write_file',
      ],
    ]);
  });
});
