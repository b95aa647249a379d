import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { cpus, tmpdir, totalmem } from 'node:os';
import { promisify } from 'node:util';
import pg from 'pg';
import { postgresConnection } from './postgres-checkpointer.ts';

/**
 * The machine the benchmarks ran on, as lines for RESULTS.md: CPU model and cores, memory,
 * Node, the temp folder's filesystem (where lowdb writes) and PostgreSQL's version and data disk.
 */
export async function describeMachine(): Promise<string[]> {
  const cpuinfo = await readFile('/proc/cpuinfo', 'utf8').catch(() => '');
  const model = /^model name\s*:\s*(.+)$/m.exec(cpuinfo)?.[1] ?? cpus()[0]?.model ?? 'unknown';
  const lines = [
    `CPU: ${model}, ${cpus().length} cores`,
    `memory: ${(totalmem() / 1024 ** 3).toFixed(1)} GiB`,
    `Node: ${process.version} (${process.platform} ${process.arch})`,
    `temp folder (lowdbStore): ${tmpdir()} on ${await filesystemOf(tmpdir())}`,
  ];
  const client = new pg.Client(postgresConnection());
  try {
    await client.connect();
    const version = await client.query<{ version: string }>('SELECT version()');
    const settings = await client.query<{ name: string; setting: string }>(
      "SELECT name, setting FROM pg_settings WHERE name IN ('data_directory', 'synchronous_commit', 'fsync', 'wal_sync_method') ORDER BY name",
    );
    const setting = (name: string) => settings.rows.find((row) => row.name === name)?.setting;
    const dataDirectory = setting('data_directory');
    lines.push(
      `PostgreSQL: ${version.rows[0]?.version.split(' on ')[0] ?? 'unknown'}, data on ${dataDirectory === undefined ? 'unknown' : await filesystemOf(dataDirectory)}, fsync=${setting('fsync')}, synchronous_commit=${setting('synchronous_commit')}, wal_sync_method=${setting('wal_sync_method')}`,
    );
  } catch (error) {
    lines.push(`PostgreSQL: not reachable (${(error as Error).message})`);
  } finally {
    await client.end().catch(() => {});
  }
  return lines;
}

/** `df -T`'s device, type and size for the folder. */
async function filesystemOf(folder: string): Promise<string> {
  try {
    const { stdout } = await promisify(execFile)('df', ['-T', '-h', folder]);
    const [device, type, size] = stdout.trim().split('\n').at(-1)?.split(/\s+/) ?? [];
    return `${device} (${type}, ${size})`;
  } catch {
    return 'unknown filesystem';
  }
}
