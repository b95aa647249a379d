// Per step with one run, DBOS side by side (issue 26): the 20-step tool conversation on a
// zero-latency scripted model through turnlog on postgresStore, the same conversation written as
// a DBOS workflow (bench/dbos-agent.ts: a DBOS step per model call and per tool call), and
// LangGraph.js with PostgresSaver (durability async and sync), all on the same PostgreSQL server
// (TURNLOG_BENCH_PG, else 127.0.0.1:5432), in interleaved rounds, one run at a time. Per side:
// wall and CPU per step (medians), the server backends' CPU per step (from /proc, as
// bench/workers.ts reads it), the statements and write commits each side sent per step, and
// where turnlog's step waits (its store calls timed; a diagnostic turnlog side with
// synchronous_commit off shows the step without the WAL flush waits).
// Run alone: npx node bench/dbos-per-step.ts [rounds]
import { loadavg } from 'node:os';
import pg from 'pg';
import type { EventStore } from '../store/event-store.ts';
import { postgresStore } from '../store/postgres/postgres-store.ts';
import { conversationModel } from './conversation.ts';
import { addExecutor, agentLoop, launchDbosAgent } from './dbos-agent.ts';
import { agentGraph, runAgentGraph } from './langgraph-agent.ts';
import { openPostgresCheckpointer, postgresConnection } from './postgres-checkpointer.ts';
import { interleave, median, sampleLists } from './stats.ts';
import { type BenchTable, formatMs, formatTable } from './table.ts';
import { conversationRuntime, runTurnlog } from './turnlog-side.ts';
import { processTicks, ticksToMs } from './workers.ts';

/** Options of {@link benchDbosPerStep}. */
export interface DbosPerStepOptions {
  /** Model steps per conversation (default 20: 19 tool steps and a final text step). */
  steps?: number;
  /** Measured rounds; each round runs every side once (default 15). */
  rounds?: number;
  /** Unmeasured rounds first (default 3). */
  warmup?: number;
}

const sideNames = {
  turnlog: 'turnlog, postgresStore',
  turnlogNoFlush:
    'turnlog, postgresStore with synchronous_commit off (diagnostic, not durable: commits do not wait for the WAL flush)',
  dbos: 'DBOS Transact 5.3 workflow (a step per model call and per tool call)',
  langGraphAsync: 'LangGraph.js, PostgresSaver, durability async (default)',
  langGraphSync: 'LangGraph.js, PostgresSaver, durability sync',
  loop: 'the DBOS loop without DBOS (streamText per step, nothing durable)',
} as const;

type Side = keyof typeof sideNames;
const sides = Object.keys(sideNames) as Side[];
/** The sides that talk to the server (the loop does not). */
const serverSides: readonly Side[] = sides.filter((side) => side !== 'loop');

/** Each side's connections carry this application name, so its server backends can be found. */
const applicationName = (side: Side) => `turnlog_dbos_bench_${side.toLowerCase()}`;

/** Schemas and the database the benchmark creates (and drops, but the DBOS database). */
const names = {
  turnlogSchema: 'dbos_bench_turnlog',
  langGraphAsyncSchema: 'dbos_bench_langgraph_async',
  langGraphSyncSchema: 'dbos_bench_langgraph_sync',
  dbosDatabase: 'turnlog_dbos_bench',
};

/** One side's figures. */
export interface DbosPerStepRow {
  side: Side;
  label: string;
  /** Median conversation wall time ÷ steps. */
  stepMs: number;
  /** `stepMs` ÷ turnlog's. */
  ratio: number;
  /** Median CPU of this process per conversation ÷ steps. */
  cpuStepMs: number;
  /** The server backends' CPU over the measured rounds ÷ the steps they ran (0 for the loop). */
  serverCpuStepMs: number;
  /** Statements (round trips) sent to the server per step, over the measured rounds. */
  statementsPerStep: number;
  /** Write commits per step (each a WAL flush with synchronous_commit on). */
  commitsPerStep: number;
}

/** Where a turnlog side's step waits for its store (medians of its runs ÷ steps). */
export interface StoreTime {
  appendMsPerStep: number;
  appendsPerStep: number;
  otherMsPerStep: number;
  othersPerStep: number;
}

/** Every side's figures, turnlog's store time, the load average before and after the rounds. */
export interface DbosPerStepResult {
  rows: DbosPerStepRow[];
  /** Where turnlog's step waits: wall ms in store appends and other store calls per step (medians of its runs). */
  turnlogStore: Record<'turnlog' | 'turnlogNoFlush', StoreTime>;
  load: { start: number[]; end: number[] };
  steps: number;
  rounds: number;
  warmup: number;
}

/**
 * Counts the statements each tagged connection sends (every `Client.query`, by its application
 * name), and its write commits: a message with COMMIT in it (turnlog sends `BEGIN; …; COMMIT` as
 * one), or an INSERT, UPDATE, DELETE or turnlog's `append_facts` outside BEGIN … COMMIT
 * (autocommit). pg is one module for
 * turnlog, DBOS and LangGraph alike, so one wrapper sees them all.
 */
function countStatements() {
  // postgresStore's fast-path append is one `SELECT <schema>.append_facts(…)`: a write.
  const writes = (head: string, text: string) =>
    /^(INSERT|UPDATE|DELETE)/.test(head) || /\bappend_facts\(/.test(text);
  const counts = new Map<string, { statements: number; commits: number }>();
  const inTransaction = new WeakSet<object>();
  const prototype = pg.Client.prototype as unknown as {
    query: (...args: unknown[]) => unknown;
    connectionParameters?: { application_name?: string };
  };
  const original = prototype.query;
  prototype.query = function (this: typeof prototype, ...args: unknown[]) {
    const name = this.connectionParameters?.application_name;
    if (name !== undefined) {
      const count = counts.get(name) ?? { statements: 0, commits: 0 };
      counts.set(name, count);
      count.statements += 1;
      const [query] = args;
      const text = typeof query === 'string' ? query : ((query as { text?: string })?.text ?? '');
      const head = text.trimStart().slice(0, 8).toUpperCase();
      if (/\bCOMMIT\b/i.test(text)) {
        count.commits += 1;
        inTransaction.delete(this);
      } else if (head.startsWith('BEGIN')) inTransaction.add(this);
      else if (head.startsWith('ROLLBACK')) inTransaction.delete(this);
      else if (writes(head, text) && !inTransaction.has(this)) count.commits += 1;
    }
    return original.apply(this, args);
  };
  return {
    snapshot: () => new Map([...counts].map(([name, count]) => [name, { ...count }])),
    restore() {
      prototype.query = original;
    },
  };
}

/**
 * The store, timing its calls: wall ms spent in each method (the part of turnlog's step that
 * waits for the server) and how many calls.
 */
function timedStore(store: EventStore) {
  const spent = { appendMs: 0, appends: 0, otherMs: 0, others: 0 };
  const timed = new Proxy(store, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver);
      if (typeof value !== 'function') return value;
      const bound = value.bind(target);
      // Only calls that answer a promise are timed (a subscription is returned as it is).
      return (...args: unknown[]) => {
        const started = performance.now();
        const result = bound(...args);
        if (!(result instanceof Promise)) return result;
        return result.finally(() => {
          const elapsed = performance.now() - started;
          if (key === 'append') {
            spent.appendMs += elapsed;
            spent.appends += 1;
          } else {
            spent.otherMs += elapsed;
            spent.others += 1;
          }
        });
      };
    },
  });
  return { store: timed, snapshot: () => ({ ...spent }) };
}

/** CPU ticks of every server backend per tagged side, now (from /proc). */
async function backendTicks(monitor: pg.Pool): Promise<Map<string, number>> {
  const activity = await monitor.query<{ pid: number; application_name: string }>(
    `SELECT pid, application_name FROM pg_stat_activity WHERE application_name LIKE 'turnlog_dbos_bench_%'`,
  );
  const ticks = new Map<string, number>();
  for (const row of activity.rows) {
    const { total } = await processTicks(row.pid);
    ticks.set(row.application_name, (ticks.get(row.application_name) ?? 0) + total);
  }
  return ticks;
}

/**
 * turnlog on postgresStore in its own schema, over a tagged pool; `noFlush` turns
 * synchronous_commit off on its connections (a diagnostic: the commits stop waiting for the WAL
 * flush, so what is left is the rest of the step).
 */
async function turnlogSide(side: 'turnlog' | 'turnlogNoFlush', steps: number) {
  const schema = side === 'turnlog' ? names.turnlogSchema : `${names.turnlogSchema}_noflush`;
  const pool = new pg.Pool({
    ...postgresConnection(),
    max: 10,
    idleTimeoutMillis: 0,
    application_name: applicationName(side),
    ...(side === 'turnlogNoFlush' ? { options: '-c synchronous_commit=off' } : {}),
  });
  await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  const store = timedStore(postgresStore({ pool, schema }));
  const runtime = conversationRuntime({ store: store.store, steps });
  /** Its store time in each run so far (emptied after the warm-up). */
  const storeRuns: ReturnType<typeof store.snapshot>[] = [];
  return {
    storeRuns,
    /** Runs the conversation on a new session, its store time taken (snapshots cost nothing beside a run). */
    async run(sessionId: string) {
      const before = store.snapshot();
      await runTurnlog({ runtime, sessionId, steps });
      const after = store.snapshot();
      storeRuns.push({
        appendMs: after.appendMs - before.appendMs,
        appends: after.appends - before.appends,
        otherMs: after.otherMs - before.otherMs,
        others: after.others - before.others,
      });
    },
    async close() {
      await runtime.close();
      await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await pool.end();
    },
  };
}

/** Opens every side; `close` undoes it all. */
async function openSides(steps: number) {
  const turnlog = await turnlogSide('turnlog', steps);
  const noFlush = await turnlogSide('turnlogNoFlush', steps);
  const dbos = await launchDbosAgent({
    database: names.dbosDatabase,
    model: conversationModel(steps),
    applicationName: applicationName('dbos'),
    fresh: true,
  });
  const savers = {
    async: await openPostgresCheckpointer(names.langGraphAsyncSchema, {
      applicationName: applicationName('langGraphAsync'),
    }),
    sync: await openPostgresCheckpointer(names.langGraphSyncSchema, {
      applicationName: applicationName('langGraphSync'),
    }),
  };
  const graphs = {
    async: agentGraph({ model: conversationModel(steps), checkpointer: savers.async.saver }),
    sync: agentGraph({ model: conversationModel(steps), checkpointer: savers.sync.saver }),
  };
  const loopModel = conversationModel(steps);
  let run = 0;
  const next = () => {
    run += 1;
    return `dbos_bench_${Date.now()}_${run}`;
  };
  const expectSteps = (side: string) => (taken: number) => {
    if (taken !== steps) throw new Error(`${side}: ${taken} model steps, expected ${steps}`);
  };
  const runs: Record<Side, () => Promise<unknown>> = {
    turnlog: () => turnlog.run(next()),
    turnlogNoFlush: () => noFlush.run(next()),
    dbos: () => dbos.run(next(), steps).then(expectSteps('DBOS')),
    langGraphAsync: () =>
      runAgentGraph({ graph: graphs.async, threadId: next(), steps, durability: 'async' }),
    langGraphSync: () =>
      runAgentGraph({ graph: graphs.sync, threadId: next(), steps, durability: 'sync' }),
    loop: () =>
      agentLoop({ model: loopModel, steps, execute: addExecutor, durable: false }).then(
        expectSteps('loop'),
      ),
  };
  return {
    runs,
    /** Each turnlog side's store time per run so far (emptied after the warm-up). */
    storeRuns: { turnlog: turnlog.storeRuns, turnlogNoFlush: noFlush.storeRuns },
    async close() {
      await turnlog.close();
      await noFlush.close();
      await dbos.shutdown();
      await savers.async.close();
      await savers.sync.close();
    },
  };
}

/**
 * Runs the conversation through every side in interleaved rounds (a new session, workflow or
 * thread per run), after warm-up rounds, and returns per-step figures. Every run is checked for
 * the full step count.
 */
export async function benchDbosPerStep(
  options: DbosPerStepOptions = {},
): Promise<DbosPerStepResult> {
  const steps = options.steps ?? 20;
  const rounds = options.rounds ?? 15;
  const warmup = options.warmup ?? 3;
  const monitor = new pg.Pool({ ...postgresConnection(), max: 1 });
  const statements = countStatements();
  const opened = await openSides(steps);
  try {
    await interleave({ sides: opened.runs, rounds: 0, warmup });
    const ticksBefore = await backendTicks(monitor);
    const statementsBefore = statements.snapshot();
    opened.storeRuns.turnlog.splice(0);
    opened.storeRuns.turnlogNoFlush.splice(0);
    const cpu = sampleLists(sides);
    const start = loadavg();
    const samples = await interleave({ sides: opened.runs, rounds, warmup: 0, cpu });
    const end = loadavg();
    const ticksAfter = await backendTicks(monitor);
    const statementsAfter = statements.snapshot();
    const stepsRun = rounds * steps;
    const delta = (after: Map<string, number>, before: Map<string, number>, side: Side) =>
      (after.get(applicationName(side)) ?? 0) - (before.get(applicationName(side)) ?? 0);
    const counted = (side: Side, key: 'statements' | 'commits') =>
      (statementsAfter.get(applicationName(side))?.[key] ?? 0) -
      (statementsBefore.get(applicationName(side))?.[key] ?? 0);
    const baseline = median(samples.turnlog) / steps;
    const rows = sides.map((side): DbosPerStepRow => {
      const stepMs = median(samples[side]) / steps;
      const server = serverSides.includes(side);
      return {
        side,
        label: sideNames[side],
        stepMs,
        ratio: stepMs / baseline,
        cpuStepMs: median(cpu[side]) / steps,
        serverCpuStepMs: server ? ticksToMs(delta(ticksAfter, ticksBefore, side)) / stepsRun : 0,
        statementsPerStep: counted(side, 'statements') / stepsRun,
        commitsPerStep: counted(side, 'commits') / stepsRun,
      };
    });
    const storeTime = (runs: typeof opened.storeRuns.turnlog) => {
      const of = (key: keyof (typeof runs)[number]) => median(runs.map((one) => one[key])) / steps;
      return {
        appendMsPerStep: of('appendMs'),
        appendsPerStep: of('appends'),
        otherMsPerStep: of('otherMs'),
        othersPerStep: of('others'),
      };
    };
    const turnlogStore = {
      turnlog: storeTime(opened.storeRuns.turnlog),
      turnlogNoFlush: storeTime(opened.storeRuns.turnlogNoFlush),
    };
    return { rows, turnlogStore, load: { start, end }, steps, rounds, warmup };
  } finally {
    statements.restore();
    await opened.close();
    await monitor.end();
  }
}

/** The rows as a table, with the targets (turnlog faster than DBOS and PostgresSaver async). */
export function dbosPerStepTable(result: DbosPerStepResult): BenchTable {
  const { rows, load } = result;
  const row = (side: Side) => rows.find((candidate) => candidate.side === side) as DbosPerStepRow;
  const turnlog = row('turnlog');
  const target = (side: Side) => {
    const relative = turnlog.stepMs / row(side).stepMs;
    return `${relative < 1 ? 'met' : 'MISSED'} (${relative.toFixed(2)}×)`;
  };
  const goal = (side: Side) =>
    side === 'turnlog'
      ? `faster than DBOS: ${target('dbos')}; than PostgresSaver async: ${target('langGraphAsync')}`
      : '';
  const loads = (values: number[]) => values.map((value) => value.toFixed(1)).join(', ');
  return {
    title: `Per step with one run, DBOS side by side: ${result.steps}-step tool conversation, zero-latency model, one PostgreSQL`,
    columns: [
      'side',
      'per step',
      'ratio to turnlog',
      'CPU per step (process)',
      'server backends CPU per step',
      'process + server CPU',
      'statements per step',
      'write commits per step',
      'goal',
    ],
    rows: rows.map((candidate) => [
      candidate.label,
      formatMs(candidate.stepMs),
      `${candidate.ratio.toFixed(2)}×`,
      formatMs(candidate.cpuStepMs),
      candidate.side === 'loop' ? '-' : formatMs(candidate.serverCpuStepMs),
      formatMs(candidate.cpuStepMs + candidate.serverCpuStepMs),
      candidate.statementsPerStep.toFixed(1),
      candidate.commitsPerStep.toFixed(2),
      goal(candidate.side),
    ]),
    notes: [
      `wall and process CPU: medians of ${result.rounds} interleaved rounds after ${result.warmup} warm-up rounds; one run at a time, a new session, workflow or thread per run`,
      `load average (1, 5, 15 min): ${loads(load.start)} before the rounds, ${loads(load.end)} after`,
      ...(['turnlog', 'turnlogNoFlush'] as const).map((side) => {
        const time = result.turnlogStore[side];
        return `${side === 'turnlog' ? "turnlog's step" : 'with synchronous_commit off'}, where the time goes (medians over the measured runs, per step): ${formatMs(time.appendMsPerStep)} waiting for ${time.appendsPerStep.toFixed(2)} store appends (each its own commit), ${formatMs(time.otherMsPerStep)} in ${time.othersPerStep.toFixed(2)} other store calls, the rest in the process`;
      }),
      "server backends CPU: the /proc user + system ticks (10 ms each) of each side's PostgreSQL backends (found by application name) over all measured rounds ÷ the steps run; the server's shared background processes (WAL writer, checkpointer) are in no side",
      "statements: every query each side's connections sent (BEGIN and COMMIT count), over the measured rounds ÷ the steps run; write commits: the messages with a COMMIT and the writes outside a transaction (INSERT, UPDATE, DELETE, turnlog's SELECT append_facts(…)); each waits for a WAL flush (synchronous_commit on); DBOS's count includes its once-a-second background statements (queue and timeout housekeeping), its workflow itself commits 41 times per conversation (one per DBOS step, its start and its outcome)",
      `one server (TURNLOG_BENCH_PG, else 127.0.0.1:5432): turnlog and LangGraph in schemas of database test, DBOS in its own database ${names.dbosDatabase}; pools of 10 connections each`,
      'DBOS: each step checks the workflow is not cancelled and reads any recorded output, runs, then records its output in one transaction (an ownership check and an INSERT); the workflow records its start and its outcome',
    ],
  };
}

if (import.meta.main) {
  const rounds = process.argv[2] === undefined ? undefined : Number(process.argv[2]);
  console.log(
    `load average at start: ${loadavg()
      .map((value) => value.toFixed(2))
      .join(', ')}`,
  );
  console.log(
    formatTable(dbosPerStepTable(await benchDbosPerStep(rounds === undefined ? {} : { rounds }))),
  );
}
