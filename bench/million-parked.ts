// Issue 26, item 5: one PostgreSQL database holding 1,000 and 1,000,000 parked runs (waiting for a
// permission decision, lease released), filled in SQL (bench/million-fill.ts). Against each, in
// the same run and alternating: a fresh worker process's start (until it answers a request), its
// RSS and heap after startup and after a few scan periods, the takeover scan's time and plan, and
// one decision on a parked run end to end (bench/million-parked-child.ts). Also openRuns(), what
// recover() reads. The schemas are dropped at the end (TURNLOG_MILLION_KEEP=1 keeps them).
// Run alone: npx node bench/million-parked.ts [count …]   (default 1000 1000000)
import { execFile } from 'node:child_process';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import pg from 'pg';
import { postgresSchema } from '../store/postgres/postgres-connection.ts';
import { takeOverStatement } from '../store/postgres/postgres-leases.ts';
import { unattendedRunsStatement } from '../store/postgres/postgres-open-runs.ts';
import { postgresStore } from '../store/postgres/postgres-store.ts';
import { fillParked, parkedSession } from './million-fill.ts';
import type { WorkerSample } from './million-parked-child.ts';
import { postgresConnection } from './postgres-checkpointer.ts';
import { type BenchTable, formatBytes, formatMs } from './table.ts';

/** What one count of parked runs measured. */
export interface MillionRow {
  count: number;
  fillMs: number;
  /** pg_total_relation_size of the schema's tables, and the disk used by the whole fill. */
  schemaBytes: number;
  samples: (WorkerSample & { load: number })[];
  /** EXPLAIN (ANALYZE, BUFFERS) of the takeover scan, no lease expired (rolled back). */
  scanPlan: string[];
  /** takeOverExpiredLeases() with no lease expired, timed alternately with the other counts. */
  scanMs: { median: number; p90: number };
  /** EXPLAIN (ANALYZE, BUFFERS) of what a worker's recover() reads (unattendedRuns). */
  recoverPlan: string[];
  /** openRuns() (what recover() reads before rebuilding each run): time, runs, heap it took. */
  openRunsMs: number;
  openRuns: number;
}

/** What the bench measured, with the disk before and after filling. */
export interface MillionResult {
  rows: MillionRow[];
  diskBefore: string;
  diskFilled: string;
}

const rounds = Number(process.env.TURNLOG_MILLION_ROUNDS ?? 7);
const child = fileURLToPath(new URL('./million-parked-child.ts', import.meta.url));

function connectionString(): string {
  const config = postgresConnection();
  if (config.connectionString !== undefined) return config.connectionString;
  return `postgres://${config.user}@${config.host}:${config.port}/${config.database}`;
}

async function disk(): Promise<string> {
  const { stdout } = await promisify(execFile)('df', ['-h', '--output=used,avail,pcent', '/work']);
  return stdout.trim().split('\n').at(-1)?.trim().replace(/\s+/g, ' ') ?? '';
}

/** Fills one schema per count, then measures worker processes against them, alternating. */
export async function benchMillionParked(
  counts: readonly number[] = [1_000, 1_000_000],
  log: (line: string) => void = (line) => console.error(line),
): Promise<MillionResult> {
  const url = connectionString();
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  const schemas = counts.map((count) => `turnlog_million_${count}`);
  const diskBefore = await disk();
  try {
    const rows: MillionRow[] = [];
    for (const [index, count] of counts.entries()) {
      const schema = schemas[index] as string;
      const fillMs = await fillParked(pool, url, schema, count, log);
      rows.push({
        count,
        fillMs,
        schemaBytes: await schemaBytes(pool, schema),
        samples: [],
        scanPlan: await explain(pool, takeOverStatement(`${schema}.leases`), [
          'bench-explain',
          2_000,
          10,
        ]),
        scanMs: { median: 0, p90: 0 },
        recoverPlan: await explain(pool, unattendedRunsStatement(postgresSchema(schema))),
        ...(await openRuns(url, schema)),
      });
    }
    const diskFilled = await disk();
    await timeScans(url, rows);
    for (let round = 0; round < rounds; round += 1) {
      const order = round % 2 === 0 ? rows : [...rows].reverse();
      for (const row of order) {
        const schema = `turnlog_million_${row.count}`;
        const { stdout } = await promisify(execFile)(
          process.execPath,
          ['--expose-gc', child, url, schema, parkedSession(round * 7)],
          { maxBuffer: 1024 * 1024 },
        );
        const sample = JSON.parse(stdout.trim().split('\n').at(-1) ?? '') as WorkerSample;
        row.samples.push({ ...sample, load: loadavg()[0] ?? 0 });
        log(`round ${round + 1}, ${row.count} parked: ${JSON.stringify(sample)}`);
      }
    }
    return { rows, diskBefore, diskFilled };
  } finally {
    if (process.env.TURNLOG_MILLION_KEEP !== '1') {
      for (const schema of schemas) await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    }
    await pool.end();
  }
}

async function schemaBytes(pool: pg.Pool, schema: string): Promise<number> {
  const { rows } = await pool.query(
    `SELECT sum(pg_total_relation_size(c.oid))::float8 AS bytes FROM pg_class c
     JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'r'`,
    [schema],
  );
  return Number(rows[0]?.bytes ?? 0);
}

/** A statement's plan, executed in a transaction that is rolled back. */
async function explain(
  pool: pg.Pool,
  statement: string,
  values: unknown[] = [],
): Promise<string[]> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const { rows } = await client.query(
      `EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) ${statement}`,
      values,
    );
    return rows.map((row) => String(row['QUERY PLAN']));
  } finally {
    await client.query('ROLLBACK');
    client.release();
  }
}

/** 200 takeover scans per count (none expired), one count after the other, through the store. */
async function timeScans(url: string, rows: MillionRow[]): Promise<void> {
  const stores = rows.map((row) =>
    postgresStore({ connectionString: url, schema: `turnlog_million_${row.count}` }),
  );
  const times = rows.map((): number[] => []);
  try {
    for (let round = 0; round < 200; round += 1) {
      for (const [index, store] of stores.entries()) {
        const started = performance.now();
        const taken = await store.takeOverExpiredLeases({ workerId: 'bench-scan', leaseMs: 2_000 });
        times[index]?.push(performance.now() - started);
        if (taken.length > 0) throw new Error(`million-parked: the scan took ${taken.length} runs`);
      }
    }
  } finally {
    await Promise.all(stores.map((store) => store.close()));
  }
  for (const [index, row] of rows.entries()) {
    const sorted = [...(times[index] ?? [])].sort((left, right) => left - right);
    row.scanMs = {
      median: sorted[Math.floor(sorted.length / 2)] ?? 0,
      p90: sorted[Math.floor(sorted.length * 0.9)] ?? 0,
    };
  }
}

/** openRuns() on a fresh store: what `recover()` reads first, whatever it then rebuilds. */
async function openRuns(
  url: string,
  schema: string,
): Promise<{ openRunsMs: number; openRuns: number }> {
  const store = postgresStore({ connectionString: url, schema });
  try {
    await store.sessions().catch(() => []);
    const started = performance.now();
    const runs = await store.openRuns();
    return { openRunsMs: performance.now() - started, openRuns: runs.length };
  } finally {
    await store.close();
  }
}

function medianOf(values: number[]): number {
  const sorted = [...values].sort((left, right) => left - right);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

/** The table for RESULTS.md: medians of the rounds per count, and the last count ÷ the first. */
export function millionTable(result: MillionResult): BenchTable {
  const { rows } = result;
  const first = rows[0];
  const last = rows.at(-1);
  const median = (row: MillionRow, pick: (sample: WorkerSample) => number) =>
    medianOf(row.samples.map(pick));
  const line = (
    name: string,
    pick: (sample: WorkerSample) => number,
    format: (value: number) => string,
  ) => [
    name,
    ...rows.map((row) => format(median(row, pick))),
    first && last ? `${(median(last, pick) / median(first, pick)).toFixed(2)}×` : '',
  ];
  return {
    title: 'A million parked runs: one worker against 1,000 and 1,000,000 (issue 26)',
    columns: [
      `median of ${rounds} worker processes`,
      ...rows.map((row) => `${row.count} parked`),
      'ratio',
    ],
    rows: [
      line('start: process → first request answered', (s) => s.startMs, formatMs),
      line('… of which createRuntime → first request', (s) => s.openMs, formatMs),
      line('… CPU time of the process until then', (s) => s.startCpuMs, formatMs),
      line('recover() (the worker path) after startup', (s) => s.recoverMs, formatMs),
      [
        'runs recover() resumed',
        ...rows.map((row) => row.samples.map((s) => s.recovered).join(', ')),
        '',
      ],
      line('RSS after startup and recover()', (s) => s.rssStarted, formatBytes),
      line('heap after startup and recover() (after GC)', (s) => s.heapStarted, formatBytes),
      line('RSS after 3 × leaseMs (≈ 12 scans)', (s) => s.rssSettled, formatBytes),
      line('heap after 3 × leaseMs', (s) => s.heapSettled, formatBytes),
      [
        'takeover scan, nothing expired: median (p90) of 200',
        ...rows.map((row) => `${formatMs(row.scanMs.median)} (${formatMs(row.scanMs.p90)})`),
        first && last ? `${(last.scanMs.median / first.scanMs.median).toFixed(2)}×` : '',
      ],
      line('decide() on a parked run, until durable', (s) => s.decideMs, formatMs),
      line('… until the run ended', (s) => s.endedMs, formatMs),
      line('RSS after the decided run ended', (s) => s.rssEnd, formatBytes),
      [
        'load average (1 min) beside the samples',
        ...rows.map((row) => row.samples.map((s) => s.load.toFixed(1)).join(', ')),
        '',
      ],
      [
        'openRuns() (what recover() read before; turnlog check)',
        ...rows.map((row) => `${formatMs(row.openRunsMs)}, ${row.openRuns} runs`),
        '',
      ],
      ['fill in SQL', ...rows.map((row) => formatMs(row.fillMs)), ''],
      [
        'schema on disk (tables and indexes)',
        ...rows.map((row) => formatBytes(row.schemaBytes)),
        '',
      ],
    ],
    notes: [
      `disk of /work (used, available, %): ${result.diskBefore} before, ${result.diskFilled} filled`,
      ...rows.flatMap((row) => [
        `takeover scan plan at ${row.count} parked:`,
        ...row.scanPlan.map((line) => `    ${line}`),
        `recover()'s read (unattendedRuns) plan at ${row.count} parked:`,
        ...row.recoverPlan.map((line) => `    ${line}`),
      ]),
    ],
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const counts = process.argv.slice(2).map(Number);
  const result = await benchMillionParked(counts.length > 0 ? counts : undefined);
  console.log(JSON.stringify(millionTable(result), null, 2));
}
