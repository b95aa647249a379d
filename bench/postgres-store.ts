// Per durable step on one PostgreSQL: the same 20-step tool conversation on a zero-latency
// scripted model through turnlog on postgresStore and LangGraph.js with PostgresSaver, on the same
// server (TURNLOG_BENCH_PG, else 127.0.0.1:5432/test), in interleaved rounds, one run at a time.
// Run alone: npx node bench/postgres-store.ts
import { loadavg } from 'node:os';
import type { EventStore } from '../store/event-store.ts';
import { postgresStore } from '../store/postgres/postgres-store.ts';
import { conversationModel } from './conversation.ts';
import { agentGraph, runAgentGraph } from './langgraph-agent.ts';
import { openPostgresCheckpointer, postgresConnection } from './postgres-checkpointer.ts';
import { interleave, median, sampleLists } from './stats.ts';
import { type BenchTable, formatMs, formatTable } from './table.ts';
import { conversationRuntime, runTurnlog } from './turnlog-side.ts';

/** Options of {@link benchPostgresStore}. */
export interface PostgresStoreBenchOptions {
  /** Model steps per conversation (default 20: 19 tool steps and a final text step). */
  steps?: number;
  /** Measured rounds; each round runs every side once (default 15). */
  rounds?: number;
  /** Unmeasured rounds first (default 3). */
  warmup?: number;
}

/** One side's median. */
export interface PostgresStoreRow {
  side: string;
  conversationMs: number;
  stepMs: number;
  /** `stepMs` ÷ turnlog's on postgresStore. */
  ratio: number;
  /** Median CPU time of this process per step (PostgreSQL's own work is not in it). */
  cpuStepMs: number;
  /** `cpuStepMs` ÷ turnlog's on postgresStore. */
  cpuRatio: number;
}

/** The load average (1, 5, 15 minutes) before and after the measured rounds. */
export interface PostgresStoreLoad {
  start: number[];
  end: number[];
}

const sideNames = {
  turnlog: 'turnlog, postgresStore (one transaction per append, one round trip)',
  turnlogExact:
    'turnlog, postgresStore, appends without expectedSeq (the exact path: two round trips)',
  langGraphAsync: 'LangGraph.js, PostgresSaver, durability async (default)',
  langGraphSync: 'LangGraph.js, PostgresSaver, durability sync',
} as const;

/** Schemas the benchmark creates and drops. */
const schemas = { turnlog: 'turnlog_bench_store', langGraph: 'turnlog_bench_langgraph' };

/**
 * Runs the conversation through each side in interleaved rounds (a new session or thread per
 * run) and returns per-step medians. Every run is checked for the full step count.
 */
export async function benchPostgresStore(
  options: PostgresStoreBenchOptions = {},
): Promise<{ rows: PostgresStoreRow[]; load: PostgresStoreLoad }> {
  const steps = options.steps ?? 20;
  const connection = postgresConnection();
  const pg = (await import('pg')).default;
  const pool = new pg.Pool({ ...connection, max: 10 });
  await pool.query(`DROP SCHEMA IF EXISTS ${schemas.turnlog} CASCADE`);
  const store = postgresStore({ pool, schema: schemas.turnlog });
  const runtime = conversationRuntime({ store, steps });
  const exactRuntime = conversationRuntime({ store: withoutExpectedSeq(store), steps });
  const langGraph = await openPostgresCheckpointer(schemas.langGraph);
  const graph = agentGraph({ model: conversationModel(steps), checkpointer: langGraph.saver });
  let run = 0;
  const next = () => {
    run += 1;
    return `bench_${run}`;
  };
  try {
    const cpu = sampleLists(Object.keys(sideNames) as (keyof typeof sideNames)[]);
    const start = loadavg();
    const samples = await interleave({
      rounds: options.rounds ?? 15,
      warmup: options.warmup ?? 3,
      cpu,
      sides: {
        turnlog: () => runTurnlog({ runtime, sessionId: next(), steps }),
        turnlogExact: () => runTurnlog({ runtime: exactRuntime, sessionId: next(), steps }),
        langGraphAsync: () =>
          runAgentGraph({ graph, threadId: next(), steps, durability: 'async' }),
        langGraphSync: () => runAgentGraph({ graph, threadId: next(), steps, durability: 'sync' }),
      },
    });
    const end = loadavg();
    const baseline = median(samples.turnlog) / steps;
    const cpuBaseline = median(cpu.turnlog) / steps;
    const rows = (Object.keys(sideNames) as (keyof typeof sideNames)[]).map((key) => {
      const conversationMs = median(samples[key]);
      const stepMs = conversationMs / steps;
      const cpuStepMs = median(cpu[key]) / steps;
      return {
        side: sideNames[key],
        conversationMs,
        stepMs,
        ratio: stepMs / baseline,
        cpuStepMs,
        cpuRatio: cpuStepMs / cpuBaseline,
      };
    });
    return { rows, load: { start, end } };
  } finally {
    await runtime.close();
    await exactRuntime.close();
    await pool.query(`DROP SCHEMA IF EXISTS ${schemas.turnlog} CASCADE`);
    await pool.end();
    await langGraph.close();
  }
}

/**
 * The store with `expectedSeq` left out of every append, so each takes the exact path (today's two
 * round trips, the state read and the write); a single writer needs no check, so the conversation
 * runs the same.
 */
function withoutExpectedSeq(store: EventStore): EventStore {
  return new Proxy(store, {
    get(target, property, receiver) {
      if (property === 'append') {
        return (sessionId: string, facts: Parameters<EventStore['append']>[1]) =>
          target.append(sessionId, facts);
      }
      const value = Reflect.get(target, property, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/** The rows as a table, with the goal (turnlog faster per durable step than PostgresSaver sync). */
export function postgresStoreTable(
  result: { rows: PostgresStoreRow[]; load: PostgresStoreLoad },
  options: PostgresStoreBenchOptions = {},
): BenchTable {
  const { rows, load } = result;
  const [turnlog] = rows;
  const sync = rows.find((row) => row.side.includes('durability sync'));
  const fastest = Math.min(
    ...rows.filter((row) => row.side.startsWith('LangGraph')).map((row) => row.stepMs),
  );
  const goal = (row: PostgresStoreRow) => {
    if (row !== turnlog || sync === undefined) return '';
    const relative = row.stepMs / sync.stepMs;
    return `faster than PostgresSaver sync: ${relative < 1 ? 'met' : 'MISSED'} (${relative.toFixed(2)}× sync, ${(row.stepMs / fastest).toFixed(2)}× the fastest)`;
  };
  const loads = (values: number[]) => values.map((value) => value.toFixed(1)).join(', ');
  return {
    title: `Per durable step on one PostgreSQL: ${options.steps ?? 20}-step tool conversation, zero-latency model`,
    columns: [
      'side',
      'per step',
      'per conversation',
      'ratio to turnlog',
      'CPU per step',
      'CPU ratio to turnlog',
      'goal',
    ],
    rows: rows.map((row) => [
      row.side,
      formatMs(row.stepMs),
      formatMs(row.conversationMs),
      `${row.ratio.toFixed(2)}×`,
      formatMs(row.cpuStepMs),
      `${row.cpuRatio.toFixed(2)}×`,
      goal(row),
    ]),
    notes: [
      `medians of ${options.rounds ?? 15} interleaved rounds after ${options.warmup ?? 3} warm-up rounds; one run at a time, a new session or thread per run`,
      `load average (1, 5, 15 min): ${loads(load.start)} before the rounds, ${loads(load.end)} after`,
      "CPU: this process's user + system time per step, every thread; PostgreSQL's own work runs in its server and is not in it",
      'both sides on the same server and database (TURNLOG_BENCH_PG, else 127.0.0.1:5432/test), each in its own schema, over pg pools of 10',
      "turnlog commits each append (3 per tool step: 60 for the conversation) in its own transaction before the run moves on; LangGraph writes, per super-step (two per tool step), a checkpoint and the step's pending writes in two transactions on two connections at once (about 83 commits per conversation with durability sync)",
    ],
  };
}

if (import.meta.main) {
  console.log(formatTable(postgresStoreTable(await benchPostgresStore())));
}
