import { spawn } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testSchema } from '../helpers/postgres.ts';
import { type BuiltCli, buildCli } from './built-cli.ts';
import { plantSessions } from './cli-sessions.ts';
import { runtimeModule } from './runtime-modules.ts';

let cli: BuiltCli;
let db: ReturnType<typeof testSchema>;
/** The store options of every command: the test database's URL (from the environment) and schema. */
let env: Record<string, string>;

beforeAll(async () => {
  cli = await buildCli();
  db = testSchema('cli');
  await plantSessions(db.open());
  env = { DATABASE_URL: db.url, TURNLOG_SCHEMA: db.schema };
}, 120_000);

afterAll(async () => {
  cli?.remove();
  await db?.drop();
});

const json = async (args: string[], code = 0) => {
  const result = await cli.bin([...args, '--json'], { env });
  expect(result.code, result.stderr).toBe(code);
  return JSON.parse(result.stdout);
};

describe('the turnlog CLI on PostgreSQL (DATABASE_URL and TURNLOG_SCHEMA)', () => {
  it('sessions: lists the planted sessions with their statuses and the workers that wrote them', async () => {
    const { sessions, total } = await json(['sessions']);
    expect(total).toBe(4);
    const statuses = Object.fromEntries(
      sessions.map((session: { sessionId: string; status: string }) => [
        session.sessionId,
        session.status,
      ]),
    );
    expect(statuses).toEqual({
      's-awaiting': 'awaiting',
      's-done': 'completed',
      's-failed': 'failed',
      's-running': 'running',
    });
    const worker = sessions.find(
      (session: { sessionId: string }) => session.sessionId === 's-awaiting',
    ).worker;
    expect(worker).toMatch(/^worker-/);
    const onWorker = await json(['sessions', '--worker', worker, '--status', 'awaiting']);
    expect(onWorker.sessions.map((session: { sessionId: string }) => session.sessionId)).toEqual([
      's-awaiting',
    ]);
  });

  it('--database-url and --schema on the command line select the same store', async () => {
    const result = await cli.bin([
      'sessions',
      '--database-url',
      db.url,
      '--schema',
      db.schema,
      '--json',
    ]);
    expect(JSON.parse(result.stdout).total).toBe(4);
  });

  it('show: the timeline of a session (--json)', async () => {
    const { session, timeline } = await json(['show', 's-failed']);
    expect(session.status).toBe('failed');
    expect(timeline.at(-1)).toMatchObject({ type: 'run.ended', state: 'terminal' });
  });

  it('check and replay: a renamed tool is named (exit 1), the same code passes (exit 0)', async () => {
    const same = runtimeModule(cli, 'pg-same');
    expect(await json(['check', '--runtime', same])).toEqual({
      checked: 2,
      blocked: [],
      differences: {},
    });
    const renamed = await json(
      ['check', '--runtime', runtimeModule(cli, 'pg-renamed', { renamed: true })],
      1,
    );
    expect(renamed.blocked[0].blockers[0]).toMatchObject({
      kind: 'tool-missing',
      name: 'sendInvoice',
    });
    expect((await json(['replay', 's-done', '--runtime', same])).differences).toEqual([]);
  });

  it('stop: needs --runtime here (exit 2); with it, ends the interrupted run aborted through the runtime', async () => {
    const bare = await cli.bin(['stop', 's-running'], { env });
    expect(bare.code).toBe(2);
    expect(bare.stderr).toContain('on PostgreSQL this command needs --runtime FILE');
    const stopped = await json(['stop', 's-running', '--runtime', runtimeModule(cli, 'pg-stop')]);
    expect(stopped.session).toMatchObject({ sessionId: 's-running', status: 'aborted' });
  });

  it('tail: follows the session live while turnlog decide allows the call (--json), and exits when the run ends', async () => {
    const tail = spawn(
      process.execPath,
      [
        path.join(cli.out, 'cli/turnlog.js'),
        'tail',
        's-awaiting',
        '--until',
        'ended',
        '--lines',
        '1',
        '--json',
      ],
      { env: { PATH: process.env.PATH ?? '', ...env }, cwd: cli.out },
    );
    let out = '';
    const printed = new Promise<void>((resolve) => {
      tail.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes('\n')) resolve();
      });
    });
    const exited = new Promise<number | null>((resolve) => tail.on('exit', resolve));
    await printed;
    // Another process, `turnlog decide`, answers: its runtime (a worker) runs the tool and the
    // model's last step, and it waits until the run has ended.
    const decided = await json([
      'decide',
      's-awaiting',
      'call_inv',
      'allow',
      '--reason',
      'approved by ops',
      '--runtime',
      runtimeModule(cli, 'pg-decide-allow'),
    ]);
    expect(decided).toMatchObject({
      done: 'allow call_inv',
      session: { status: 'completed', pending: [] },
    });
    expect(await exited).toBe(0);
    const types = out
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line).type);
    expect(types).toEqual([
      'tool.permission.requested',
      'tool.permission.decided',
      'tool.started',
      'tool.settled',
      'step.started',
      'step.completed',
      'run.ended',
    ]);
  });

  it('decide: a session with no unfinished run is exit 3', async () => {
    const result = await cli.bin(
      ['decide', 's-done', 'call_x', 'allow', '--runtime', runtimeModule(cli, 'pg-decide')],
      { env },
    );
    expect(result.code).toBe(3);
  });
});
