// Per durable step on one PostgreSQL: the same 20-step tool conversation on a zero-latency
// scripted model through turnlog on postgresStore and LangGraph.js with PostgresSaver, on the same
// server (TURNLOG_BENCH_PG, else 127.0.0.1:5432/test), in interleaved rounds, one run at a time.
// Run alone: npx node bench/postgres-store.ts
import { postgresStore } from '../store/postgres-store.ts';
import { conversationModel } from './conversation.ts';
import { agentGraph, runAgentGraph } from './langgraph-agent.ts';
import { openPostgresCheckpointer, postgresConnection } from './postgres-checkpointer.ts';
import { interleave, median } from './stats.ts';
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
}

const sideNames = {
  turnlog: 'turnlog, postgresStore (one transaction per fact)',
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
): Promise<PostgresStoreRow[]> {
  const steps = options.steps ?? 20;
  const connection = postgresConnection();
  const pg = (await import('pg')).default;
  const pool = new pg.Pool({ ...connection, max: 10 });
  await pool.query(`DROP SCHEMA IF EXISTS ${schemas.turnlog} CASCADE`);
  const store = postgresStore({ pool, schema: schemas.turnlog });
  const runtime = conversationRuntime({ store, steps });
  const langGraph = await openPostgresCheckpointer(schemas.langGraph);
  const graph = agentGraph({ model: conversationModel(steps), checkpointer: langGraph.saver });
  let run = 0;
  const next = () => {
    run += 1;
    return `bench_${run}`;
  };
  try {
    const samples = await interleave({
      rounds: options.rounds ?? 15,
      warmup: options.warmup ?? 3,
      sides: {
        turnlog: () => runTurnlog({ runtime, sessionId: next(), steps }),
        langGraphAsync: () =>
          runAgentGraph({ graph, threadId: next(), steps, durability: 'async' }),
        langGraphSync: () => runAgentGraph({ graph, threadId: next(), steps, durability: 'sync' }),
      },
    });
    const baseline = median(samples.turnlog) / steps;
    return (Object.keys(sideNames) as (keyof typeof sideNames)[]).map((key) => {
      const conversationMs = median(samples[key]);
      const stepMs = conversationMs / steps;
      return { side: sideNames[key], conversationMs, stepMs, ratio: stepMs / baseline };
    });
  } finally {
    await runtime.close();
    await pool.query(`DROP SCHEMA IF EXISTS ${schemas.turnlog} CASCADE`);
    await pool.end();
    await langGraph.close();
  }
}

/** The rows as a table, with the goal (turnlog faster per durable step). */
export function postgresStoreTable(
  rows: PostgresStoreRow[],
  options: PostgresStoreBenchOptions = {},
): BenchTable {
  const [turnlog, ...langGraph] = rows;
  const fastest = Math.min(...langGraph.map((row) => row.stepMs));
  return {
    title: `Per durable step on one PostgreSQL: ${options.steps ?? 20}-step tool conversation, zero-latency model`,
    columns: ['side', 'per step', 'per conversation', 'ratio to turnlog', 'goal'],
    rows: rows.map((row) => [
      row.side,
      formatMs(row.stepMs),
      formatMs(row.conversationMs),
      `${row.ratio.toFixed(2)}×`,
      row === turnlog
        ? `faster than PostgresSaver: ${row.stepMs < fastest ? 'met' : 'MISSED'} (${(row.stepMs / fastest).toFixed(2)}× the fastest)`
        : '',
    ]),
    notes: [
      `medians of ${options.rounds ?? 15} interleaved rounds after ${options.warmup ?? 3} warm-up rounds; one run at a time, a new session or thread per run`,
      'both sides on the same server and database (TURNLOG_BENCH_PG, else 127.0.0.1:5432/test), each in its own schema, over pg pools of 10',
      'turnlog commits every fact (about 5 per tool step) in its own transaction before the run moves on; LangGraph writes a checkpoint per super-step',
    ],
  };
}

if (import.meta.main) {
  console.log(formatTable(postgresStoreTable(await benchPostgresStore())));
}
