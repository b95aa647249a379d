import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lowdbStore } from '../../store/folder/lowdb-store.ts';
import { type BuiltCli, buildCli } from './built-cli.ts';
import { plantSessions } from './cli-sessions.ts';
import { runtimeModule } from './runtime-modules.ts';

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

describe('turnlog show on the folder store', () => {
  it('prints the timeline in words, each fact with the state it led to, and what a person owes', async () => {
    const result = await cli.bin(['show', 's-awaiting', '--dir', dir]);
    expect(result.code).toBe(0);
    const lines = result.stdout.trim().split('\n');
    expect(lines[0]).toBe('Session s-awaiting: awaiting in awaitingPermission, 1 run');
    expect(lines.at(-1)).toBe(
      'Owed: allow|deny for sendInvoice call_inv: turnlog decide s-awaiting call_inv allow --runtime FILE',
    );
    expect(
      lines.some((line) =>
        /tool\.permission\.requested +sendInvoice call_inv asks a person: \{"customer":"acme"\} {2}→ awaitingPermission$/.test(
          line,
        ),
      ),
    ).toBe(true);
  });

  it('gives the session, the timeline and projectTurn’s view with --json', async () => {
    const result = await cli.bin(['show', 's-done', '--dir', dir, '--json']);
    expect(result.code).toBe(0);
    const { session, timeline, view } = JSON.parse(result.stdout);
    expect(session).toMatchObject({ sessionId: 's-done', status: 'completed' });
    expect(timeline.map((entry: { type: string }) => entry.type)).toEqual([
      'run.started',
      'step.started',
      'step.completed',
      'run.ended',
    ]);
    expect(timeline[2].summary).toMatch(/: stop "Hello\."$/);
    expect(view.runs[0].text).toBe('Hello.');
  });

  it('exits 3 for a session the store does not have', async () => {
    const result = await cli.bin(['show', 's-nowhere', '--dir', dir, '--json']);
    expect(result.code).toBe(3);
    expect(JSON.parse(result.stdout).error.message).toContain('session s-nowhere has no facts');
  });
});

describe('turnlog tail on the folder store', () => {
  it('prints the last facts and, with --until idle, exits at once when the run waits for a person', async () => {
    const result = await cli.bin([
      'tail',
      's-awaiting',
      '--dir',
      dir,
      '--until',
      'idle',
      '--lines',
      '2',
      '--json',
    ]);
    expect(result.code).toBe(0);
    const entries = result.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(entries.map((entry) => [entry.type, entry.state])).toEqual([
      ['step.completed', 'settlingTools.deciding'],
      ['tool.permission.requested', 'awaitingPermission'],
    ]);
  });
});

describe('turnlog check and replay on the folder store', () => {
  it('check: names no run for the code that parked them, exit 0', async () => {
    const result = await cli.bin([
      'check',
      '--dir',
      dir,
      '--json',
      '--runtime',
      runtimeModule(cli, 'same'),
    ]);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({ checked: 2, blocked: [], differences: {} });
  });

  it('check: names the parked run whose pending call’s tool was renamed, exit 1', async () => {
    const result = await cli.bin([
      'check',
      '--dir',
      dir,
      '--runtime',
      runtimeModule(cli, 'renamed', { renamed: true }),
    ]);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain(
      'Checked 2 unfinished runs: 1 cannot be continued by this code.',
    );
    expect(result.stdout).toContain(
      '    tool-missing: call call_inv of tool sendInvoice is still to run, and this runtime has no tool sendInvoice',
    );
  });

  it('check: names the parked run whose pending call’s schema changed (--json), exit 1', async () => {
    const module = runtimeModule(cli, 'schema', { schemaChanged: true });
    const result = await cli.bin(['check', '--dir', dir, '--json', '--runtime', module]);
    expect(result.code).toBe(1);
    const report = JSON.parse(result.stdout);
    expect(report.blocked.map((run: { sessionId: string }) => run.sessionId)).toEqual([
      's-awaiting',
    ]);
    expect(report.blocked[0].blockers[0]).toMatchObject({
      kind: 'tool-schema-changed',
      callId: 'call_inv',
    });
  });

  it('check without --runtime is a usage error (exit 2); a module that exports no options is exit 6', async () => {
    expect((await cli.bin(['check', '--dir', dir])).code).toBe(2);
    const empty = cli.file('empty.mjs', 'export const nothing = 1;\n');
    const result = await cli.bin(['check', '--dir', dir, '--runtime', empty]);
    expect(result.code).toBe(6);
    expect(result.stderr).toContain(
      'must export default (or as runtimeOptions) the options of createRuntime',
    );
  });

  it('replay: the same code does what the recording did, exit 0 (--json)', async () => {
    const result = await cli.bin([
      'replay',
      's-done',
      '--dir',
      dir,
      '--json',
      '--runtime',
      runtimeModule(cli, 'same'),
    ]);
    expect(result.code).toBe(0);
    const report = JSON.parse(result.stdout);
    expect(report.differences).toEqual([]);
    expect(report.runs[0].replayed.status).toBe('completed');
  });

  it('replay: a policy that now denies is found, exit 1', async () => {
    const module = runtimeModule(cli, 'deny', { denyPolicy: true });
    const result = await cli.bin([
      'replay',
      's-awaiting',
      '--dir',
      dir,
      '--json',
      '--runtime',
      module,
    ]);
    expect(result.code).toBe(1);
    const { differences } = JSON.parse(result.stdout);
    const messages = differences.map((difference: { message: string }) => difference.message);
    expect(messages).toContain('call sendInvoice call_inv: no longer asks a person');
    expect(messages).toContain('call sendInvoice call_inv: undecided → deny by policy');
  });
});

describe('turnlog decide and stop on the folder store', () => {
  it('decide: allows the call through the runtime, which runs the tool here and finishes the run', async () => {
    const marker = path.join(dir, 'executed.txt');
    const module = runtimeModule(cli, 'marked', { marker });
    const result = await cli.bin([
      'decide',
      's-awaiting',
      'call_inv',
      'allow',
      '--dir',
      dir,
      '--json',
      '--runtime',
      module,
    ]);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({
      done: 'allow call_inv',
      session: { sessionId: 's-awaiting', status: 'completed', pending: [] },
    });
    expect(readFileSync(marker, 'utf8')).toBe('invoice acme\n');
  });

  it('decide: a decision nobody owes any more is refused by the runtime’s checks (no active run: exit 3), nothing runs', async () => {
    const marker = path.join(dir, 'executed-again.txt');
    const module = runtimeModule(cli, 'again', { marker });
    const result = await cli.bin([
      'decide',
      's-awaiting',
      'call_inv',
      'deny',
      '--dir',
      dir,
      '--runtime',
      module,
    ]);
    expect(result.code).toBe(3);
    expect(result.stderr).toContain('s-awaiting');
    expect(existsSync(marker)).toBe(false);
  });

  it('stop: ends the interrupted run aborted without --runtime', async () => {
    const result = await cli.bin([
      'stop',
      's-running',
      '--dir',
      dir,
      '--json',
      '--reason',
      'stuck overnight',
    ]);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({
      done: 'stop',
      session: { sessionId: 's-running', status: 'aborted' },
    });
    const shown = JSON.parse((await cli.bin(['show', 's-running', '--dir', dir, '--json'])).stdout);
    expect(
      shown.timeline.find((entry: { type: string }) => entry.type === 'run.stop.requested').summary,
    ).toBe('"stuck overnight"');
  });
});
