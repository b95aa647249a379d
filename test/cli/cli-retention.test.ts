import { mkdir, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCli } from '../../cli/run-cli.ts';
import { lowdbStore } from '../../store/folder/lowdb-store.ts';
import { exportSession } from '../../store/retention/session-archive.ts';
import { campaignFacts } from '../store/retention/retention-sessions.ts';

/** Runs one command line in-process; stderr is a terminal when `tty`. */
async function turnlog(argv: string[], options: { tty?: boolean } = {}) {
  let stdout = '';
  let stderr = '';
  const code = await runCli({
    argv,
    env: {},
    cwd: process.cwd(),
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text), isTTY: options.tty === true, columns: 80 },
    now: () => Date.parse('2026-03-01T00:00:00.000Z'),
  });
  return { code, stdout, stderr };
}

describe('turnlog purge, export and import', () => {
  let scratch: string;
  let dir: string;

  beforeEach(async () => {
    scratch = await mkdtemp(path.join(tmpdir(), 'turnlog-cli-retention-'));
    dir = path.join(scratch, 'store');
    const store = lowdbStore({ dir });
    // ended_1 … ended_3 ended on 2026-01-10; kept_recent on 2026-02-10; kept_open is running.
    for (const sessionId of ['ended_1', 'ended_2', 'ended_3', 'kept_recent', 'kept_open']) {
      await store.append(sessionId, campaignFacts(sessionId));
    }
    await store.close();
  });

  afterEach(async () => {
    await rm(scratch, { recursive: true, force: true });
  });

  it('lists what --dry-run would remove and changes nothing', async () => {
    const result = await turnlog([
      'purge',
      '--dir',
      dir,
      '--older-than',
      '30d',
      '--dry-run',
      '--json',
    ]);
    expect(result.code).toBe(0);
    const report = JSON.parse(result.stdout);
    expect(report.endedBefore).toBe('2026-01-30T00:00:00.000Z');
    expect(report.sessions.map((session: { sessionId: string }) => session.sessionId)).toEqual([
      'ended_1',
      'ended_2',
      'ended_3',
    ]);
    const store = lowdbStore({ dir });
    expect((await store.sessions()).length).toBe(5);
    await store.close();
  });

  it('archives then removes the sessions ended before the time, with progress lines off a terminal', async () => {
    const archive = path.join(scratch, 'archive');
    const store = lowdbStore({ dir });
    const expected = await exportSession(store, 'ended_2');
    await store.close();
    const result = await turnlog([
      'purge',
      '--dir',
      dir,
      '--ended-before',
      '2026-02-01T00:00:00Z',
      '--archive',
      archive,
      '--json',
    ]);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({
      endedBefore: '2026-02-01T00:00:00.000Z',
      archiveDir: archive,
      found: 3,
      removed: 3,
      archived: ['ended_1', 'ended_2', 'ended_3'].map((id) => path.join(archive, `${id}.jsonl`)),
      left: [],
      stopped: false,
    });
    expect(result.stderr).toBe('purge: 1/3 (30%)\npurge: 2/3 (60%)\npurge: 3/3 (100%)\n');
    expect(await readFile(path.join(archive, 'ended_2.jsonl'), 'utf8')).toBe(expected);
    const again = await turnlog(['purge', '--dir', dir, '--older-than', '30d']);
    expect(again.stdout).toBe(
      'Removed 0 of 0 sessions whose last run ended before 2026-01-30T00:00:00.000Z.\n',
    );

    // The archives go back in, into this store or another; a second import changes nothing.
    const other = path.join(scratch, 'other');
    const imported = await turnlog(['import', archive, '--dir', dir], { tty: true });
    expect(imported.code).toBe(0);
    expect(imported.stdout).toBe('Imported 3, identical 0, refused 0 of 3 archives.\n');
    expect(imported.stderr).toContain('\rimport ');
    expect(imported.stderr.endsWith('\r\x1b[2K')).toBe(true);
    const repeat = await turnlog(['import', archive, '--dir', dir, '--json']);
    expect(
      JSON.parse(repeat.stdout).files.map((item: { outcome: string }) => item.outcome),
    ).toEqual(['identical', 'identical', 'identical']);
    await lowdbStore({ dir: other }).close();
    expect(
      (await turnlog(['import', path.join(archive, 'ended_2.jsonl'), '--dir', other])).code,
    ).toBe(0);
    const exported = await turnlog(['export', 'ended_2', '--dir', other]);
    expect(exported.stdout).toBe(expected);
  });

  it('refuses an archive over a session with other facts (exit 4) and says which', async () => {
    const out = path.join(scratch, 'out');
    await mkdir(out);
    await turnlog(['export', 'ended_1', '--dir', dir, '--out', path.join(scratch, 'e1.jsonl')]);
    const text = await readFile(path.join(scratch, 'e1.jsonl'), 'utf8');
    // The same session id with another history, in another store.
    const other = path.join(scratch, 'other');
    const store = lowdbStore({ dir: other });
    await store.append(
      'ended_1',
      campaignFacts('ended_2').map((fact) => ({ ...fact, sessionId: 'ended_1' })),
    );
    await store.close();
    const result = await turnlog([
      'import',
      path.join(scratch, 'e1.jsonl'),
      '--dir',
      other,
      '--json',
    ]);
    expect(result.code).toBe(4);
    const [file] = JSON.parse(result.stdout).files;
    expect(file).toMatchObject({ sessionId: 'ended_1', outcome: 'exists' });
    expect(text.split('\n')[0]).toBe(
      '{"format":"turnlog.session-archive/1","sessionId":"ended_1","facts":3}',
    );
    const written = await turnlog(['export', 'ended_1', '--dir', dir, '--out', out, '--json']);
    expect(JSON.parse(written.stdout)).toEqual({
      sessionId: 'ended_1',
      facts: 3,
      file: path.join(out, 'ended_1.jsonl'),
    });
    expect(await readdir(out)).toEqual(['ended_1.jsonl']);
  });

  it('exits 2 without a time, 3 exporting a session that is not there', async () => {
    const missing = await turnlog(['purge', '--dir', dir]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('give --older-than DURATION or --ended-before TIME');
    expect((await turnlog(['purge', '--dir', dir, '--ended-before', 'yesterday'])).code).toBe(2);
    const absent = await turnlog(['export', 'nobody', '--dir', dir]);
    expect(absent.code).toBe(3);
    expect(absent.stderr).toContain('session nobody has no facts');
  });
});
