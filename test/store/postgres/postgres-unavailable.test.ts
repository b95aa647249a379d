import { spawn } from 'node:child_process';
import { createServer, type Server, type Socket } from 'node:net';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { StoreOpenError, StoreUnavailableError } from '../../../store/postgres/postgres-errors.ts';
import { type PostgresStore, postgresStore } from '../../../store/postgres/postgres-store.ts';
import { testDatabaseUrl, testSchema } from '../../helpers/postgres.ts';
import { PostgresProxy } from '../../helpers/postgres-proxy.ts';
import { storeFacts } from '../store-facts.ts';

const child = path.join(import.meta.dirname, 'cut-connection-child.ts');
// Short bounds so a wedged database shows within the test; the defaults are in the README.
const timeouts = { connectMs: 400, queryMs: 400, closeMs: 400 };
// An upper bound far above every timeout: the calls end because of the timeouts, not this.
const settlesWithinMs = 15_000;

/** Runs the child against `url` and returns its exit code and output; `cut` runs at its `open`. */
function runChild(url: string, schema: string, cut: () => void) {
  return new Promise<{ code: number | null; lines: string[]; stderr: string }>((resolve) => {
    const process_ = spawn(process.execPath, [child, url, schema], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const lines: string[] = [];
    let stderr = '';
    process_.stderr.on('data', (chunk) => {
      stderr += String(chunk);
    });
    process_.stdout.on('data', (chunk: Buffer) => {
      for (const line of String(chunk).split('\n').filter(Boolean)) {
        lines.push(line);

        if (line === 'open') {
          cut();
          process_.stdin.end('go\n');
        }
      }
    });
    process_.on('exit', (code) => resolve({ code, lines, stderr }));
  });
}

/** Resolves with how the promise settled and how long that took. */
async function settled(promise: Promise<unknown>) {
  const start = performance.now();
  const outcome = await promise.then(
    () => 'ok',
    (error: Error) => error.name,
  );
  return { outcome, ms: performance.now() - start };
}

describe('postgresStore when its database fails', () => {
  let database: ReturnType<typeof testSchema>;
  let proxy: PostgresProxy;

  beforeEach(async () => {
    database = testSchema('unavailable');
    proxy = await PostgresProxy.start(testDatabaseUrl());
  });

  afterEach(async () => {
    await proxy.close();
    await database.drop();
  });

  it('never lets a connection cut right after the greeting end the process; each read fails with StoreUnavailableError, each append with StoreWriteError', async () => {
    const { code, lines, stderr } = await runChild(proxy.url(), database.schema, () =>
      proxy.setMode('cut-after-greeting'),
    );
    // Issue 26, defect 2: the appends' connections (taken with pool.connect()) got their
    // error listener one tick too late, and the 57P01 ended the process with code 1.
    expect({ code, stderr: code === 0 ? '' : stderr }).toEqual({ code: 0, stderr: '' });
    expect(lines).toEqual([
      'open',
      ...Array(3).fill(['StoreUnavailableError', 'StoreWriteError']).flat(),
      'closed',
    ]);
  });

  it('wraps every node-postgres error: what failed, whether it may have been recorded, that a retry is safe', async () => {
    const store = postgresStore({ connectionString: proxy.url(), schema: database.schema });
    await store.sessions();
    proxy.setMode('cut-after-greeting');
    const read = await store.read('s1').catch((error: unknown) => error);
    expect(StoreUnavailableError.isInstance(read)).toBe(true);
    expect(read).toMatchObject({ method: 'read', mayBeRecorded: false, retrySafe: true });
    const posted = await store
      .postToInbox({
        id: 'r1',
        sessionId: 's1',
        runId: 'run_1',
        kind: 'stop',
        input: {},
        postedBy: 'a',
      })
      .catch((error: unknown) => error);
    expect(posted).toMatchObject({
      name: 'StoreUnavailableError',
      method: 'postToInbox',
      mayBeRecorded: true,
      retrySafe: true,
    });
    expect((posted as Error).message).toMatch(
      /^postgresStore\.postToInbox: the database did not answer \(.*\); it may or may not have recorded the call; call it again once the database is back/,
    );
    proxy.setMode('pass');
    // Back: the same calls succeed.
    expect(await store.read('s1')).toEqual([]);
    await store.close();
  });

  describe('wedged (accepts, never answers)', () => {
    let store: PostgresStore;

    beforeEach(async () => {
      store = postgresStore({ connectionString: proxy.url(), schema: database.schema, timeouts });
      await store.sessions();
      proxy.setMode('wedged');
    });

    it('fails each call with a named error within the timeouts, and close() returns', async () => {
      const lease = { sessionId: 's1', runId: 'run_1' };
      const calls = {
        read: store.read('s1'),
        append: store.append('s1', [storeFacts('s1').runStarted('f1', 'run_1')]),
        leaseOf: store.leaseOf(lease),
        acquireLease: store.acquireLease({ ...lease, workerId: 'a', leaseMs: 1_000 }),
        pendingInbox: store.pendingInbox({ sessionId: 's1' }),
        openRuns: store.openRuns(),
      };
      const results = Object.fromEntries(
        await Promise.all(
          Object.entries(calls).map(async ([name, call]) => [name, await settled(call)] as const),
        ),
      );
      expect(
        Object.fromEntries(Object.entries(results).map(([name, r]) => [name, r.outcome])),
      ).toEqual({
        read: 'StoreUnavailableError',
        append: 'StoreWriteError',
        leaseOf: 'StoreUnavailableError',
        acquireLease: 'StoreUnavailableError',
        pendingInbox: 'StoreUnavailableError',
        openRuns: 'StoreUnavailableError',
      });
      for (const { ms } of Object.values(results)) expect(ms).toBeLessThan(settlesWithinMs);
      const closing = await settled(store.close());
      expect(closing.outcome).toBe('ok');
      expect(closing.ms).toBeLessThan(settlesWithinMs);
    });

    it('closes within closeMs with a LISTEN connection and an append in flight', async () => {
      const subscribed = postgresStore({
        connectionString: proxy.url(),
        schema: database.schema,
        timeouts: { ...timeouts, queryMs: 60_000 },
      });
      proxy.setMode('pass');
      subscribed.subscribe('s1', () => {});
      await subscribed.read('s1');
      proxy.setMode('wedged');
      const append = subscribed.append('s1', []).catch(() => {});
      const closing = await settled(subscribed.close());
      expect(closing.outcome).toBe('ok');
      // queryMs is a minute: close() did not wait for the append, whose connection it dropped.
      expect(closing.ms).toBeLessThan(settlesWithinMs);
      await append;
      await store.close();
    });
  });

  it('gives StoreOpenError within connectMs from a server that accepts and never answers, and closes', async () => {
    const sockets: Socket[] = [];
    const silent: Server = createServer((socket) => {
      sockets.push(socket);
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const address = silent.address();
    const port = typeof address === 'object' && address !== null ? address.port : 0;
    const store = postgresStore({
      connectionString: `postgres://postgres@127.0.0.1:${port}/test`,
      timeouts,
    });
    const open = await settled(store.sessions());
    expect(open.outcome).toBe(StoreOpenError.name);
    expect(open.ms).toBeLessThan(settlesWithinMs);
    const closing = await settled(store.close());
    expect(closing).toMatchObject({ outcome: 'ok' });
    expect(closing.ms).toBeLessThan(settlesWithinMs);
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => silent.close(() => resolve()));
  });
});
