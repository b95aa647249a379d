// One append of a large fact through postgresStore (issue 26, defect 5's append part): wall time
// of the append and the CPU its PostgreSQL backends spent on it, for a fact of 1, 10 and 50 MB,
// with this checkout and (A/B, in the same run, interleaved) another one.
// Run: npx node bench/large-append.ts [<base checkout>] (TURNLOG_BENCH_PG: the server, default
// 127.0.0.1:5432/test; a schema per side, dropped at the end)
import path from 'node:path';
import pg from 'pg';
import type { NewFact } from '../events/facts.ts';
import type { postgresStore as PostgresStoreFactory } from '../store/postgres/postgres-store.ts';
import { postgresConnection } from './postgres-checkpointer.ts';
import { median } from './stats.ts';
import { type BenchTable, formatMs, formatTable } from './table.ts';
import { processTicks, ticksToMs } from './workers.ts';

const sizesMb = [1, 10, 50];
const repetitions = 3;

/** A side: a checkout's postgresStore on a schema of its own. */
async function side(label: string, root: string) {
  const { postgresStore } = (await import(path.join(root, 'store/postgres/postgres-store.ts'))) as {
    postgresStore: typeof PostgresStoreFactory;
  };
  const schema = `turnlog_bench_large_${label}`;
  const application = `turnlog_bench_large_${label}`;
  const { connectionString } = postgresConnection();
  const base = connectionString ?? 'postgres://postgres@127.0.0.1:5432/test';
  const store = postgresStore({
    connectionString: `${base}${base.includes('?') ? '&' : '?'}application_name=${application}`,
    schema,
  });
  return { label, schema, application, store };
}

const envelope = (sessionId: string, id: string) => ({
  id,
  at: '2026-01-01T00:00:00.000Z',
  sessionId,
  turnId: 'turn_1',
  runId: 'run_1',
});

/** CPU ticks of the backends named `application` (the side's pool). */
async function backendTicks(monitor: pg.Pool, application: string): Promise<number> {
  const { rows } = await monitor.query<{ pid: number }>(
    'SELECT pid FROM pg_stat_activity WHERE application_name = $1',
    [application],
  );
  let ticks = 0;
  for (const row of rows) ticks += (await processTicks(row.pid)).total;
  return ticks;
}

const root = path.resolve(import.meta.dirname, '..');
const baseRoot = process.argv[2];
const sides = [await side('after', root)];
if (baseRoot !== undefined) sides.unshift(await side('before', path.resolve(baseRoot)));
const monitor = new pg.Pool({ ...postgresConnection(), max: 1 });
const samples = new Map<string, { wallMs: number; clientMs: number; serverMs: number }[]>();
try {
  for (const { schema } of sides) await monitor.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  let session = 0;
  for (let round = 0; round < repetitions; round += 1) {
    for (const mb of sizesMb) {
      for (const { label, application, store } of round % 2 === 0 ? sides : [...sides].reverse()) {
        session += 1;
        const sessionId = `large_${session}`;
        const started: NewFact = {
          type: 'run.started',
          input: { text: 'hello' },
          runtimeVersion: 'bench',
          limits: {
            maxSteps: 10,
            maxAttempts: 3,
            toolOutputChars: 10_000,
            toolConcurrency: 4,
            stopGraceMs: 1_000,
          },
          ...envelope(sessionId, 'f1'),
        } as NewFact;
        await store.append(sessionId, [started], { expectedSeq: 0 });
        const text = 'x'.repeat(mb * 1_000_000);
        const fact = {
          type: 'steering.received',
          messageId: 'm2',
          text,
          ...envelope(sessionId, 'f2'),
        } as NewFact;
        const before = await backendTicks(monitor, application);
        const at = performance.now();
        const cpu = process.cpuUsage();
        await store.append(sessionId, [fact], { expectedSeq: 1 });
        const wallMs = performance.now() - at;
        const used = process.cpuUsage(cpu);
        const clientMs = (used.user + used.system) / 1000;
        const serverMs = ticksToMs((await backendTicks(monitor, application)) - before);
        const key = `${label} ${mb}`;
        samples.set(key, [...(samples.get(key) ?? []), { wallMs, clientMs, serverMs }]);
      }
    }
  }
} finally {
  for (const { schema, store } of sides) {
    await store.close();
    await monitor.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  }
  await monitor.end();
}

const table: BenchTable = {
  title: 'postgresStore: one append of a large fact (a steering text of N MB)',
  columns: ['fact', ...sides.map(({ label }) => `${label}: wall / client CPU / server CPU`)],
  rows: sizesMb.map((mb) => [
    `${mb} MB`,
    ...sides.map(({ label }) => {
      const own = samples.get(`${label} ${mb}`) ?? [];
      const of = (pick: (sample: (typeof own)[number]) => number) =>
        formatMs(median(own.map(pick)));
      return `${of((sample) => sample.wallMs)} / ${of((sample) => sample.clientMs)} / ${of((sample) => sample.serverMs)}`;
    }),
  ]),
  notes: [
    `medians of ${repetitions}, the sides interleaved; client CPU: this process (the store's checks, copies, JSON and the protocol; every thread); server CPU: /proc of the store's backends (by application_name) around the append; the fact's text is built before the clock starts, its JSON inside the append`,
  ],
};
console.log(formatTable(table));
