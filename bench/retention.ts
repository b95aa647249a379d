// Retention (issue 27, item 3): N ended sessions (default 100,000) and a few kept ones on
// lowdbStore and on postgresStore, then purgeSessions of the ended ones; the time to find them,
// the time to purge them, and the disk (folder) or table size before and after. The sessions are
// written before the clock starts (lowdbStore through a StoreFs whose syncs do nothing: setup only;
// the purge runs on a store reopened with the real one).
// Run alone: npx node bench/retention.ts [sessions] [lowdb|postgres]; with --archive, archive too.
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { NewFact } from '../events/facts.ts';
import type { EventStore } from '../store/event-store.ts';
import { lowdbStore } from '../store/folder/lowdb-store.ts';
import { nodeStoreFs, type StoreFs } from '../store/folder/store-fs.ts';
import { postgresStore } from '../store/postgres/postgres-store.ts';
import { purgeSessions } from '../store/retention/purge-sessions.ts';
import type { SessionRetention } from '../store/session-retention.ts';
import { postgresConnection } from './postgres-checkpointer.ts';
import { type BenchTable, formatBytes, formatMs } from './table.ts';

const run = promisify(execFile);
const endedBefore = new Date('2026-02-01T00:00:00.000Z');
const schema = 'turnlog_bench_retention';

/** One store's measurement. */
export interface RetentionRow {
  store: 'lowdbStore' | 'postgresStore';
  ended: number;
  kept: number;
  archived: boolean;
  /** `endedSessions` alone (what the purge starts with), on a store just opened. */
  findMs: number;
  /** `purgeSessions`, finding included. */
  purgeMs: number;
  removed: number;
  /** Disk (lowdbStore: `du` of the folder) or table size (postgresStore) before and after. */
  bytesBefore: number;
  bytesAfter: number;
  /** postgresStore: after `VACUUM FULL` (the purge leaves dead rows for autovacuum to reuse). */
  bytesAfterVacuum: number | undefined;
  /** Session folders (lowdbStore) or session rows (postgresStore) before and after. */
  sessionsBefore: number;
  sessionsAfter: number;
  /** The archive folder's size, with `archived`. */
  archiveBytes: number | undefined;
}

/** A session of one run of four facts (about 1 KB), ended in January, or kept (ended later). */
function sessionFacts(sessionId: string, kept: boolean): NewFact[] {
  const envelope = (id: string) => ({
    id: `${sessionId}.${id}`,
    at: '2026-01-10T00:00:00.000Z',
    sessionId,
    turnId: 'turn_1',
    runId: 'run_1',
  });
  const limits = {
    maxSteps: 10,
    maxAttempts: 3,
    maxOutputTokens: undefined,
    toolOutputChars: 10_000,
    contextWindowTokens: undefined,
    toolConcurrency: 4,
    stopGraceMs: 1_000,
  };
  const text = 'Please reconcile the March invoices for acme and send the summary.';
  return [
    { ...envelope('1'), type: 'run.started', input: { text }, runtimeVersion: 'bench', limits },
    { ...envelope('2'), type: 'steering.received', messageId: 'm2', text: 'Only the EU ones.' },
    { ...envelope('3'), type: 'steering.received', messageId: 'm3', text: 'And copy finance.' },
    {
      ...envelope('4'),
      ...(kept ? { at: '2026-02-10T00:00:00.000Z' } : {}),
      type: 'run.ended',
      status: 'completed',
      reason: 'end_turn',
    },
  ] as NewFact[];
}

/** Appends every session, `concurrency` at a time. */
async function fill(store: EventStore, ended: number, kept: number, concurrency = 64) {
  const ids = [
    ...Array.from({ length: ended }, (_, index) => [`ended-${index}`, false] as const),
    ...Array.from({ length: kept }, (_, index) => [`kept-${index}`, true] as const),
  ];
  let next = 0;
  const worker = async () => {
    for (let index = next++; index < ids.length; index = next++) {
      const [sessionId, isKept] = ids[index] as readonly [string, boolean];
      await store.append(sessionId, sessionFacts(sessionId, isKept), { expectedSeq: 0 });
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

/** Disk usage of a folder in bytes (`du -sk`: blocks, so many small files count what they take). */
async function diskBytes(dir: string): Promise<number> {
  const { stdout } = await run('du', ['-sk', dir]);
  return Number(stdout.split('\t')[0]) * 1024;
}

/** A StoreFs whose syncs do nothing: for writing the sessions before the clock starts. */
const unsyncedFs: StoreFs = {
  ...nodeStoreFs,
  async open(file, flags) {
    const handle = await nodeStoreFs.open(file, flags);
    return { ...handle, datasync: async () => {}, sync: async () => {} };
  },
};

async function timed<T>(work: () => Promise<T>): Promise<[T, number]> {
  const started = performance.now();
  const result = await work();
  return [result, performance.now() - started];
}

async function archiveOptions(archive: boolean) {
  if (!archive) return { archiveDir: undefined, cleanup: async () => {} };
  const archiveDir = await mkdtemp(path.join(tmpdir(), 'turnlog-bench-archive-'));
  return { archiveDir, cleanup: () => rm(archiveDir, { recursive: true, force: true }) };
}

/** lowdbStore: fill, reopen, find, purge, measure the folder. */
export async function benchLowdbRetention(options: {
  ended: number;
  kept: number;
  archive: boolean;
}): Promise<RetentionRow> {
  const dir = await mkdtemp(path.join(tmpdir(), 'turnlog-bench-retention-'));
  const { archiveDir, cleanup } = await archiveOptions(options.archive);
  try {
    const setup = lowdbStore({ dir, fs: unsyncedFs, maxCachedSessions: 0 });
    await fill(setup, options.ended, options.kept);
    await setup.close();
    await run('sync');
    const sessionsDir = path.join(dir, 'sessions');
    const sessionsBefore = (await readdir(sessionsDir)).length;
    const bytesBefore = await diskBytes(dir);
    const store = lowdbStore({ dir });
    const [found, findMs] = await timed(() => store.endedSessions({ endedBefore }));
    await store.close();
    const reopened = lowdbStore({ dir });
    const [report, purgeMs] = await timed(() =>
      purgeSessions(reopened, { endedBefore, ...(archiveDir ? { archiveDir } : {}) }),
    );
    await reopened.close();
    if (found.length !== options.ended || report.removed !== options.ended) {
      throw new Error(`found ${found.length}, removed ${report.removed} of ${options.ended}`);
    }
    return {
      store: 'lowdbStore',
      ...options,
      archived: options.archive,
      findMs,
      purgeMs,
      removed: report.removed,
      bytesBefore,
      bytesAfter: await diskBytes(dir),
      bytesAfterVacuum: undefined,
      sessionsBefore,
      sessionsAfter: (await readdir(sessionsDir)).length,
      archiveBytes: archiveDir === undefined ? undefined : await diskBytes(archiveDir),
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
    await cleanup();
  }
}

/** postgresStore: fill, find, purge, measure the schema's tables (with their indexes and TOAST). */
export async function benchPostgresRetention(options: {
  ended: number;
  kept: number;
  archive: boolean;
}): Promise<RetentionRow> {
  const pg = (await import('pg')).default;
  const pool = new pg.Pool({ ...postgresConnection(), max: 16 });
  const { archiveDir, cleanup } = await archiveOptions(options.archive);
  try {
    await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    const setup = postgresStore({ pool, schema });
    await fill(setup, options.ended, options.kept, 16);
    await setup.close();
    const size = async () => {
      await pool.query('CHECKPOINT').catch(() => {});
      const { rows } = await pool.query(
        `SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint AS bytes
         FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE n.nspname = $1 AND c.relkind = 'r'`,
        [schema],
      );
      return Number(rows[0]?.bytes ?? 0);
    };
    const sessionRows = async () =>
      Number((await pool.query(`SELECT count(*) AS n FROM ${schema}.sessions`)).rows[0]?.n ?? 0);
    await pool.query(`VACUUM ANALYZE`);
    const sessionsBefore = await sessionRows();
    const bytesBefore = await size();
    const store: EventStore & SessionRetention = postgresStore({ pool, schema });
    const [found, findMs] = await timed(() => store.endedSessions({ endedBefore }));
    const [report, purgeMs] = await timed(() =>
      purgeSessions(store, { endedBefore, ...(archiveDir ? { archiveDir } : {}) }),
    );
    await store.close();
    if (found.length !== options.ended || report.removed !== options.ended) {
      throw new Error(`found ${found.length}, removed ${report.removed} of ${options.ended}`);
    }
    const bytesAfter = await size();
    const sessionsAfter = await sessionRows();
    for (const table of ['facts', 'sessions', 'runs', 'leases', 'inbox', 'partials']) {
      await pool.query(`VACUUM FULL ${schema}.${table}`);
    }
    return {
      store: 'postgresStore',
      ...options,
      archived: options.archive,
      findMs,
      purgeMs,
      removed: report.removed,
      bytesBefore,
      bytesAfter,
      bytesAfterVacuum: await size(),
      sessionsBefore,
      sessionsAfter,
      archiveBytes: archiveDir === undefined ? undefined : await diskBytes(archiveDir),
    };
  } finally {
    await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => {});
    await pool.end();
    await cleanup();
  }
}

/** Runs the stores asked for. */
export async function benchRetention(
  options: { ended?: number; kept?: number; archive?: boolean; stores?: string[] } = {},
): Promise<RetentionRow[]> {
  const spec = {
    ended: options.ended ?? 100_000,
    kept: options.kept ?? 1_000,
    archive: options.archive ?? false,
  };
  const stores = options.stores ?? ['lowdb', 'postgres'];
  const rows: RetentionRow[] = [];
  if (stores.includes('lowdb')) rows.push(await benchLowdbRetention(spec));
  if (stores.includes('postgres')) rows.push(await benchPostgresRetention(spec));
  return rows;
}

/** Long times in seconds, short ones as `formatMs` writes them. */
function seconds(ms: number): string {
  return ms >= 10_000 ? `${(ms / 1000).toFixed(1)} s` : formatMs(ms);
}

/** The rows as a table. */
export function retentionTable(rows: readonly RetentionRow[]): BenchTable {
  const per = (row: RetentionRow) => formatMs(row.purgeMs / row.removed);
  return {
    title: 'Retention: purging ended sessions (purgeSessions)',
    columns: [
      'store',
      'ended + kept sessions',
      'archive',
      'find (endedSessions)',
      'purge (find included)',
      'per session',
      'size before',
      'size after',
      'after VACUUM FULL',
      'sessions before → after',
      'archive size',
    ],
    rows: rows.map((row) => [
      row.store,
      `${row.ended.toLocaleString('en')} + ${row.kept.toLocaleString('en')}`,
      row.archived ? 'yes' : 'no',
      seconds(row.findMs),
      seconds(row.purgeMs),
      per(row),
      formatBytes(row.bytesBefore),
      formatBytes(row.bytesAfter),
      row.bytesAfterVacuum === undefined ? '' : formatBytes(row.bytesAfterVacuum),
      `${row.sessionsBefore.toLocaleString('en')} → ${row.sessionsAfter.toLocaleString('en')}`,
      row.archiveBytes === undefined ? '' : formatBytes(row.archiveBytes),
    ]),
    notes: [
      'each session: one run of four facts (run.started, two steering.received, run.ended), about 1 KB; the kept ones ended after the cut-off',
      'lowdbStore: size is `du -sk` of the store folder (blocks: a session folder of two small files takes 12 KiB); the purge runs on a store reopened cold, batches of 100, one fsync of sessions/ per batch',
      'postgresStore: size is pg_total_relation_size of the schema’s tables (indexes and TOAST included) after a CHECKPOINT; a purge deletes rows (one transaction per 100 sessions), which autovacuum reuses, so the files shrink only after VACUUM FULL',
    ],
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const count = args.find((arg) => /^\d+$/.test(arg));
  const stores = args.filter((arg) => arg === 'lowdb' || arg === 'postgres');
  const rows = await benchRetention({
    ...(count === undefined ? {} : { ended: Number(count) }),
    archive: args.includes('--archive'),
    ...(stores.length > 0 ? { stores } : {}),
  });
  const { formatTable } = await import('./table.ts');
  console.log(formatTable(retentionTable(rows)));
}
