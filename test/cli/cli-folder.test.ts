import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lowdbStore } from '../../store/folder/lowdb-store.ts';
import { type BuiltCli, buildCli } from './built-cli.ts';
import { plantSessions } from './cli-sessions.ts';

let cli: BuiltCli;
let dir: string;

beforeAll(async () => {
  cli = await buildCli();
  dir = mkdtempSync(path.join(tmpdir(), 'turnlog-cli-'));
  await plantSessions(lowdbStore({ dir }));
}, 120_000);

afterAll(() => {
  cli?.remove();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

describe('turnlog --help', () => {
  it('lists every command and the exit statuses from the one definition, and exits 0', async () => {
    const result = await cli.bin(['--help']);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^ {2}sessions {2}/m);
    expect(result.stdout).toContain('  130  interrupted (Ctrl-C)');
    const command = await cli.bin(['sessions', '--help']);
    expect(command.code).toBe(0);
    expect(command.stdout).toContain('--status LIST');
    expect(command.stdout).toContain(
      'any of awaiting, parked, running, completed, failed, aborted',
    );
  });

  it('exits 2 on an unknown command, option or status, saying what is known', async () => {
    const unknown = await cli.bin(['sesions']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('unknown command sesions; the commands are sessions');
    expect((await cli.bin(['sessions', '--bogus'])).code).toBe(2);
    const status = await cli.bin(['sessions', '--status', 'stuck', '--dir', dir]);
    expect(status.code).toBe(2);
    expect(status.stderr).toContain('--status stuck is not one of awaiting, parked');
  });
});

describe('turnlog sessions on the folder store', () => {
  it('lists each session’s latest run with its status, state and owed decisions (--json)', async () => {
    const result = await cli.bin(['sessions', '--dir', dir, '--json']);
    expect(result.code).toBe(0);
    const { sessions, total } = JSON.parse(result.stdout);
    expect(total).toBe(4);
    const byId = Object.fromEntries(
      sessions.map((session: { sessionId: string }) => [session.sessionId, session]),
    );
    expect(byId['s-awaiting']).toMatchObject({
      status: 'awaiting',
      state: 'awaitingPermission',
      worker: null,
      input: 'Invoice acme.',
      pending: [
        {
          kind: 'permission',
          callId: 'call_inv',
          name: 'sendInvoice',
          input: { customer: 'acme' },
        },
      ],
    });
    expect(byId['s-done']).toMatchObject({ status: 'completed', pending: [] });
    expect(byId['s-failed']).toMatchObject({ status: 'failed' });
    expect(byId['s-running']).toMatchObject({ status: 'running', state: 'requesting.streaming' });
  });

  it('filters by status and by how long a session has been quiet', async () => {
    const ids = async (...args: string[]) => {
      const result = await cli.bin(['sessions', '--dir', dir, '--json', ...args]);
      expect(result.code).toBe(0);
      return JSON.parse(result.stdout).sessions.map(
        (session: { sessionId: string }) => session.sessionId,
      );
    };
    expect(await ids('--status', 'awaiting')).toEqual(['s-awaiting']);
    expect((await ids('--status', 'failed,running')).sort()).toEqual(['s-failed', 's-running']);
    // The planted facts are dated 2026-11-01 (the test runtime's clock).
    expect((await ids('--older-than', '1d')).length).toBe(4);
    expect(await ids('--older-than', '36500d')).toEqual([]);
    expect(await ids('--worker', 'w-1')).toEqual([]);
  });

  it('prints a table by default, and plain progress lines on stderr off a terminal', async () => {
    const result = await cli.bin(['sessions', '--dir', dir, '--status', 'awaiting']);
    expect(result.code).toBe(0);
    const [header, row] = result.stdout.trim().split('\n');
    expect(header).toMatch(/^SESSION +STATUS +STATE +WORKER +QUIET +OWED +INPUT$/);
    expect(row).toMatch(
      /^s-awaiting +awaiting +awaitingPermission +\d+d +sendInvoice call_inv +Invoice acme\.$/,
    );
    expect(result.stderr.trim().split('\n').at(-1)).toBe('sessions: 4/4 (100%)');
  });

  it('exits 5 for a folder that holds no store, without creating it', async () => {
    const missing = path.join(dir, 'no-such-store');
    const result = await cli.bin(['sessions', '--dir', missing, '--json']);
    expect(result.code).toBe(5);
    expect(JSON.parse(result.stdout).error).toMatchObject({ name: 'CliError', exit: 5 });
    expect(result.stderr).toContain(`there is no store folder ${missing}`);
  });
});
