// openRuns() after a reopen, issue 29 item 10: lowdbStore checks each tail's open-runs summary
// against the run facts of the segments before it (the log is the truth), which reads those
// segments' bytes and parses only their run.started/run.ended lines. Measured against, in the same
// run: the same number of sessions holding only a tail (what openRuns() cost when it trusted the
// header: one record and one tail per session), and a full read of every session.
// Files are written just before, so they are read from the OS cache (a warm restart).
// postgresStore (benchPostgresOpenRuns): openRuns() joins the runs index with the runs the facts
// leave open (index facts_run_bounds); baseline, in the same run and schema, the index-only query
// it used before. On TURNLOG_BENCH_PG, else 127.0.0.1:5432/test.
// Run alone: npx node bench/open-runs.ts [sessions] [facts per session]
//            npx node bench/open-runs.ts postgres [sessions] [runs per session]
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import type { NewFact } from '../events/facts.ts';
import { lowdbStore } from '../store/folder/lowdb-store.ts';
import { nodeStoreFs, type StoreFs } from '../store/folder/store-fs.ts';
import { postgresSchema } from '../store/postgres/postgres-connection.ts';
import { readOpenRuns } from '../store/postgres/postgres-open-runs.ts';
import { postgresStore } from '../store/postgres/postgres-store.ts';
import { postgresConnection } from './postgres-checkpointer.ts';
import { median } from './stats.ts';
import { type BenchTable, formatMs } from './table.ts';

/** One measurement: sessions of `facts` facts each (256 a segment), median of `rounds` reopens. */
export interface OpenRunsRow {
  shape: string;
  sessions: number;
  facts: number;
  openRunsMs: number;
  readAllMs: number;
}

/** Setup only: a file system whose syncs do nothing (the measured stores use the real one). */
const noSync: StoreFs = {
  ...nodeStoreFs,
  async open(file, flags) {
    const handle = await nodeStoreFs.open(file, flags);
    return { ...handle, datasync: async () => {}, sync: async () => {} };
  },
};

const limits = {
  maxSteps: 10,
  maxAttempts: 3,
  maxOutputTokens: undefined,
  toolOutputChars: 10_000,
  contextWindowTokens: undefined,
  toolConcurrency: 4,
  stopGraceMs: 1_000,
};

async function writeSessions(dir: string, sessions: number, facts: number): Promise<void> {
  const store = lowdbStore({ dir, fs: noSync });
  for (let index = 0; index < sessions; index += 1) {
    const sessionId = `s${index}`;
    const envelope = (id: string) => ({
      id,
      at: '2026-01-10T00:00:00.000Z',
      sessionId,
      turnId: 'turn_1',
      runId: 'run_1',
    });
    const all = [
      {
        ...envelope('f0'),
        type: 'run.started',
        input: { text: 'Summarize the open invoices.' },
        runtimeVersion: 'bench',
        limits,
      },
    ] as NewFact[];
    for (let seq = 1; seq < facts; seq += 1) {
      const text = `A steering message of about two hundred characters. ${'x'.repeat(150)}`;
      all.push({ ...envelope(`f${seq}`), type: 'steering.received', messageId: `m${seq}`, text });
    }
    for (let from = 0; from < all.length; from += 500) {
      await store.append(sessionId, all.slice(from, from + 500));
    }
  }
  await store.close();
}

async function measure(
  dir: string,
  rounds: number,
): Promise<{ openRunsMs: number; readAllMs: number }> {
  const openRuns: number[] = [];
  const readAll: number[] = [];
  for (let round = 0; round < rounds; round += 1) {
    let store = lowdbStore({ dir });
    let started = performance.now();
    const open = await store.openRuns();
    openRuns.push(performance.now() - started);
    await store.close();
    store = lowdbStore({ dir, maxCachedSessions: 0 });
    started = performance.now();
    for (const run of open) await store.read(run.sessionId);
    readAll.push(performance.now() - started);
    await store.close();
  }
  return { openRunsMs: median(openRuns), readAllMs: median(readAll) };
}

/** Sessions with 8 segments (2,048 facts) against sessions that are one tail (256 facts). */
export async function benchOpenRuns(
  sessions = 200,
  facts = 2_048,
  rounds = 5,
): Promise<OpenRunsRow[]> {
  const root = await mkdtemp(path.join(tmpdir(), 'turnlog-bench-open-runs-'));
  try {
    const rows: OpenRunsRow[] = [];
    for (const [shape, count] of [
      ['one tail segment each (the old cost)', 256],
      [`${Math.ceil(facts / 256)} segments each`, facts],
    ] as const) {
      const dir = path.join(root, String(count));
      await writeSessions(dir, sessions, count);
      rows.push({ shape, sessions, facts: count, ...(await measure(dir, rounds)) });
    }
    return rows;
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

export function openRunsTable(rows: OpenRunsRow[]): BenchTable {
  const base = rows[0]?.openRunsMs ?? 1;
  return {
    title:
      'lowdbStore openRuns() after a reopen: the tail summary checked against the log (issue 29)',
    columns: [
      'sessions',
      'facts each',
      'openRuns()',
      'vs one tail each',
      'read every session',
      'openRuns / full read',
    ],
    rows: rows.map((row) => [
      `${row.sessions} (${row.shape})`,
      String(row.facts),
      formatMs(row.openRunsMs),
      `${(row.openRunsMs / base).toFixed(2)}×`,
      formatMs(row.readAllMs),
      `${((row.openRunsMs / row.readAllMs) * 100).toFixed(0)} %`,
    ]),
  };
}

/** One postgresStore measurement: medians of `rounds` alternating calls of each query. */
export interface PostgresOpenRunsRow {
  sessions: number;
  runsEach: number;
  facts: number;
  openRuns: number;
  indexOnlyMs: number;
  checkedMs: number;
}

const benchSchema = 'turnlog_bench_open_runs';

/**
 * Fills a fresh schema (made by postgresStore's migrations) with `sessions` sessions of
 * `runsEach` runs of 8 facts each, the last run of every session left open (parked), in SQL.
 */
async function fillPostgres(pool: pg.Pool, sessions: number, runsEach: number): Promise<void> {
  await pool.query(`DROP SCHEMA IF EXISTS ${benchSchema} CASCADE`);
  const store = postgresStore({ pool, schema: benchSchema });
  await store.sessions();
  await store.close();
  const per = runsEach * 8;
  await pool.query(
    `INSERT INTO ${benchSchema}.facts (session_id, seq, id, run_id, type, body)
     SELECT 's' || s, seq, 'f' || seq, 'run_' || ((seq - 1) / 8),
       CASE WHEN (seq - 1) % 8 = 0 THEN 'run.started'
            WHEN (seq - 1) % 8 = 7 AND seq < $2 THEN 'run.ended' ELSE 'steering.received' END,
       '{}'::json
     FROM generate_series(1, $1::int) AS s, generate_series(1, $2::int) AS seq
     WHERE seq < $2 OR (seq - 1) % 8 <> 7`,
    [sessions, per],
  );
  await pool.query(
    `INSERT INTO ${benchSchema}.sessions (session_id, last_seq)
     SELECT session_id, max(seq) FROM ${benchSchema}.facts GROUP BY session_id`,
  );
  await pool.query(
    `INSERT INTO ${benchSchema}.runs (session_id, run_id, turn_id, started_seq, ended_seq)
     SELECT session_id, run_id, 'turn_1', min(seq) FILTER (WHERE type = 'run.started'),
       min(seq) FILTER (WHERE type = 'run.ended')
     FROM ${benchSchema}.facts GROUP BY session_id, run_id`,
  );
  await pool.query(`VACUUM ANALYZE ${benchSchema}.facts, ${benchSchema}.runs`);
}

/** postgresStore's openRuns(): checked against the log, and the index-only query of before. */
export async function benchPostgresOpenRuns(
  sessions = 10_000,
  runsEach = 4,
  rounds = 9,
): Promise<PostgresOpenRunsRow> {
  const pool = new pg.Pool({ ...postgresConnection(), max: 2 });
  try {
    await fillPostgres(pool, sessions, runsEach);
    const schema = postgresSchema(benchSchema);
    const indexOnly = () =>
      pool.query(
        `SELECT session_id, turn_id, run_id FROM ${schema.sql}.runs
         WHERE started_seq IS NOT NULL AND ended_seq IS NULL ORDER BY session_id, started_seq`,
      );
    const indexOnlyMs: number[] = [];
    const checkedMs: number[] = [];
    let openRuns = 0;
    for (let round = 0; round < rounds + 1; round += 1) {
      let started = performance.now();
      const before = (await indexOnly()).rows.length;
      const index = performance.now() - started;
      started = performance.now();
      const { runs, findings } = await readOpenRuns(pool, schema);
      const checked = performance.now() - started;
      if (runs.length !== before || findings.length > 0) {
        throw new Error(`bench: ${runs.length} checked open runs, ${before} in the index`);
      }
      openRuns = runs.length;
      if (round === 0) continue; // warm-up
      indexOnlyMs.push(index);
      checkedMs.push(checked);
    }
    const facts = sessions * (runsEach * 8 - 1);
    return {
      sessions,
      runsEach,
      facts,
      openRuns,
      indexOnlyMs: median(indexOnlyMs),
      checkedMs: median(checkedMs),
    };
  } finally {
    await pool.query(`DROP SCHEMA IF EXISTS ${benchSchema} CASCADE`);
    await pool.end();
  }
}

export function postgresOpenRunsTable(row: PostgresOpenRunsRow): BenchTable {
  return {
    title: 'postgresStore openRuns(): the runs index checked against the facts (issue 29)',
    columns: [
      'sessions',
      'runs each (last open)',
      'facts',
      'open runs',
      'index only (before)',
      'checked against the log',
      'ratio',
    ],
    rows: [
      [
        String(row.sessions),
        String(row.runsEach),
        String(row.facts),
        String(row.openRuns),
        formatMs(row.indexOnlyMs),
        formatMs(row.checkedMs),
        `${(row.checkedMs / row.indexOnlyMs).toFixed(2)}×`,
      ],
    ],
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [first, ...rest] = process.argv.slice(2);
  if (first === 'postgres') {
    const [sessions, runsEach] = rest.map(Number);
    const row = await benchPostgresOpenRuns(sessions || undefined, runsEach || undefined);
    console.log(JSON.stringify(postgresOpenRunsTable(row), null, 2));
  } else {
    const [sessions, facts] = [first, ...rest].map(Number);
    const rows = await benchOpenRuns(sessions || undefined, facts || undefined);
    console.log(JSON.stringify(openRunsTable(rows), null, 2));
  }
}
