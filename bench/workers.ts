// Workers on one PostgreSQL (issue 13, item 7): steps per second with 1, 2 and 4 worker
// processes on one database, and the time from a worker's SIGKILL to another worker's first fact
// for its run, at several leaseMs. Every worker is a process of its own (bench/worker-child.ts),
// as in production; the server is TURNLOG_BENCH_PG, else 127.0.0.1:5432/test.
// Run alone: npx node bench/workers.ts [throughput] [takeover] [--configs=1x4,1x64] [--rounds=3] [--window-ms=4000]
//   [--base=<another checkout>[:label]] (each configuration with that checkout too, A/B)
import { type ChildProcess, spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import type { Fact } from '../events/facts.ts';
import { postgresStore } from '../store/postgres/postgres-store.ts';
import { postgresConnection } from './postgres-checkpointer.ts';
import { median } from './stats.ts';
import { type BenchTable, formatMs, formatTable } from './table.ts';
import type { ChildOptions, ThroughputResult } from './worker-child.ts';

const childFile = fileURLToPath(new URL('./worker-child.ts', import.meta.url));

/** The server as a connection string (children take one), tagged with an application name. */
function connectionString(applicationName: string): string {
  const url = process.env.TURNLOG_BENCH_PG;
  const base = url !== undefined && url !== '' ? url : 'postgres://postgres@127.0.0.1:5432/test';
  return `${base}${base.includes('?') ? '&' : '?'}application_name=${applicationName}`;
}

const load = () =>
  loadavg()
    .map((value) => value.toFixed(2))
    .join(', ');

/** A worker process, with its stdout split into lines. */
interface Child {
  process: ChildProcess;
  /** Resolves with the first line that starts with `prefix` (its rest), rejects if the child exits first. */
  line(prefix: string): Promise<string>;
  send(line: string): void;
  /** Every line it printed so far. */
  seen: readonly string[];
  exited: Promise<number | null>;
}

function startChild(options: ChildOptions): Child {
  // TURNLOG_BENCH_NODE_ARGS: Node options for the workers, e.g. `--cpu-prof --cpu-prof-dir=/tmp/p`.
  const nodeArgs = (process.env.TURNLOG_BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const child = spawn(process.execPath, [...nodeArgs, childFile, JSON.stringify(options)], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const seen: string[] = [];
  const waiting: { prefix: string; resolve: (rest: string) => void }[] = [];
  let stderr = '';
  let buffered = '';
  child.stdout?.setEncoding('utf8');
  child.stdout?.on('data', (chunk: string) => {
    buffered += chunk;
    for (let end = buffered.indexOf('\n'); end >= 0; end = buffered.indexOf('\n')) {
      const line = buffered.slice(0, end);
      buffered = buffered.slice(end + 1);
      seen.push(line);
      for (const wait of waiting.splice(0)) {
        if (line.startsWith(wait.prefix)) wait.resolve(line.slice(wait.prefix.length).trim());
        else waiting.push(wait);
      }
    }
  });
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', (chunk: string) => {
    stderr += chunk;
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return {
    process: child,
    send: (line) => child.stdin?.write(`${line}\n`),
    seen,
    exited,
    line(prefix) {
      const found = seen.find((line) => line.startsWith(prefix));
      if (found !== undefined) return Promise.resolve(found.slice(prefix.length).trim());
      return new Promise((resolve, reject) => {
        waiting.push({ prefix, resolve });
        void exited.then((code) =>
          reject(
            new Error(
              `worker child (${options.mode} ${options.workerId}) exited (${code}) before "${prefix}": ${stderr.slice(-2000)}`,
            ),
          ),
        );
      });
    },
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// ---------------------------------------------------------------------------------------------
// Throughput

/** One measured configuration: `workers` processes, each with `inFlight` runs at a time. */
export interface WorkerConfig {
  workers: number;
  inFlight: number;
  /** Another checkout of turnlog to run instead of this one (A/B), and its name in the table. */
  base?: { root: string; label: string };
}

/** Options of {@link benchWorkerThroughput}. */
export interface ThroughputBenchOptions {
  configs?: WorkerConfig[];
  /** Rounds; each measures every configuration once, in a rotating order (default 4). */
  rounds?: number;
  steps?: number;
  /** Per measurement: running before the window opens (default 1,500 ms), and the window (4,000 ms). */
  warmupMs?: number;
  windowMs?: number;
}

/** One measurement (one configuration in one round). */
interface ThroughputSample {
  stepsPerSecond: number;
  stepMs: number;
  workerCpuPerStep: number;
  /** The kernel's part of `workerCpuPerStep`. */
  workerSystemPerStep: number;
  serverCpuPerStep: number;
  /** The kernel's part of `serverCpuPerStep` (the backends only). */
  serverSystemPerStep: number;
  backgroundCpuPerStep: number;
  busyCores: number;
  callsPerStep: Record<string, number>;
  factsPerStep: number;
  xactsPerStep: number;
  roundTripsPerStep: number;
}

/** One configuration's medians. */
export interface ThroughputRow extends WorkerConfig {
  samples: ThroughputSample[];
  stepsPerSecond: number;
  /** Median over every conversation of the configuration's windows, ÷ steps. */
  stepMs: number;
  workerCpuPerStep: number;
  /** The kernel's part of `workerCpuPerStep`. */
  workerSystemPerStep: number;
  serverCpuPerStep: number;
  /** The kernel's part of `serverCpuPerStep` (the backends only). */
  serverSystemPerStep: number;
  backgroundCpuPerStep: number;
  busyCores: number;
  callsPerStep: Record<string, number>;
  factsPerStep: number;
  xactsPerStep: number;
  roundTripsPerStep: number;
}

const throughputSchema = 'turnlog_bench_workers';

/** The configurations measured when none are given. */
const defaultConfigs: WorkerConfig[] = [
  { workers: 1, inFlight: 4 },
  { workers: 2, inFlight: 4 },
  { workers: 4, inFlight: 4 },
  // The 16 runs of 4 × 4 in fewer processes: what the process count itself changes.
  { workers: 2, inFlight: 8 },
  { workers: 1, inFlight: 16 },
  // Issue 26's target: one worker, 64 runs in flight.
  { workers: 1, inFlight: 64 },
];

/** CPU ticks of a process (user + system, and system), from /proc; 0 when it is gone. */
export async function processTicks(pid: number): Promise<{ total: number; system: number }> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
  if (stat === undefined) return { total: 0, system: 0 };
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { total: Number(fields[11]) + Number(fields[12]), system: Number(fields[12]) };
}

/** Busy and total jiffies of the whole machine (all cores), from /proc/stat. */
async function machineTicks(): Promise<{ busy: number; total: number }> {
  const [first] = (await readFile('/proc/stat', 'utf8')).split('\n');
  const values = (first ?? '').trim().split(/\s+/).slice(1, 9).map(Number);
  const total = values.reduce((sum, value) => sum + value, 0);
  const idle = (values[3] ?? 0) + (values[4] ?? 0);
  return { busy: total - idle, total };
}

const ticksPerSecond = 100; // USER_HZ on Linux (getconf CLK_TCK)
export const ticksToMs = (ticks: number) => (ticks * 1000) / ticksPerSecond;

/**
 * What the server spent, sampled at a moment: per backend of the bench's workers (by
 * application name), the shared background processes (WAL writer, checkpointer, …; shared with
 * every other user of the server), the machine, and the database's committed transactions.
 */
async function serverSample(monitor: pg.Pool) {
  const activity = await monitor.query<{ pid: number; backend_type: string; mine: boolean }>(
    `SELECT pid, backend_type, application_name LIKE 'turnlog_bench_w%' AS mine
       FROM pg_stat_activity WHERE pid <> pg_backend_pid()`,
  );
  const backends = new Map<number, { total: number; system: number }>();
  let background = 0;
  for (const row of activity.rows) {
    if (row.mine) backends.set(row.pid, await processTicks(row.pid));
    else if (row.backend_type !== 'client backend') {
      background += (await processTicks(row.pid)).total;
    }
  }
  const xacts = await monitor.query<{ xacts: string }>(
    'SELECT xact_commit + xact_rollback AS xacts FROM pg_stat_database WHERE datname = current_database()',
  );
  return {
    backends,
    background,
    machine: await machineTicks(),
    xacts: Number(xacts.rows[0]?.xacts ?? 0),
  };
}

async function measureThroughput(
  config: WorkerConfig,
  options: Required<Omit<ThroughputBenchOptions, 'configs' | 'rounds'>>,
  monitor: pg.Pool,
  round: number,
): Promise<ThroughputSample & { conversationMs: number[] }> {
  await monitor.query(`DROP SCHEMA IF EXISTS ${throughputSchema} CASCADE`);
  const children = Array.from({ length: config.workers }, (_, index) => {
    const workerId = `w${index + 1}r${round}`;
    return startChild({
      mode: 'throughput',
      ...(config.base === undefined ? {} : { root: config.base.root }),
      connectionString: connectionString(`turnlog_bench_${workerId}`),
      schema: throughputSchema,
      workerId,
      steps: options.steps,
      inFlight: config.inFlight,
      warmupMs: options.warmupMs,
      windowMs: options.windowMs,
    });
  });
  try {
    await Promise.all(children.map((child) => child.line('ready')));
    for (const child of children) child.send('go');
    const opened = performance.now();
    await sleep(options.warmupMs);
    const before = await serverSample(monitor);
    await sleep(Math.max(0, options.warmupMs + options.windowMs - (performance.now() - opened)));
    const after = await serverSample(monitor);
    const results = await Promise.all(
      children.map(async (child) => JSON.parse(await child.line('result ')) as ThroughputResult),
    );
    await Promise.all(children.map((child) => child.exited));
    const steps = results.reduce((sum, result) => sum + result.steps, 0);
    if (steps === 0)
      throw new Error(`workers ${config.workers}×${config.inFlight}: no step in the window`);
    let serverTicks = 0;
    let serverSystemTicks = 0;
    for (const [pid, ticks] of after.backends) {
      serverTicks += ticks.total - (before.backends.get(pid)?.total ?? 0);
      serverSystemTicks += ticks.system - (before.backends.get(pid)?.system ?? 0);
    }
    const calls: Record<string, number> = {};
    for (const result of results) {
      for (const [name, count] of Object.entries(result.calls))
        calls[name] = (calls[name] ?? 0) + count;
    }
    const conversationMs = results.flatMap((result) => result.conversationMs);
    const windowTicks = after.machine.total - before.machine.total;
    return {
      stepsPerSecond: steps / (options.windowMs / 1000),
      // Little's law for a closed loop: every run in flight is always in some step.
      stepMs: (config.workers * config.inFlight * 1000) / (steps / (options.windowMs / 1000)),
      conversationMs,
      workerCpuPerStep: results.reduce((sum, result) => sum + result.cpuMs, 0) / steps,
      workerSystemPerStep: results.reduce((sum, result) => sum + result.systemMs, 0) / steps,
      serverCpuPerStep: ticksToMs(serverTicks) / steps,
      serverSystemPerStep: ticksToMs(serverSystemTicks) / steps,
      backgroundCpuPerStep: ticksToMs(after.background - before.background) / steps,
      // Jiffies of all cores over the window's jiffies per core.
      busyCores: ((after.machine.busy - before.machine.busy) / windowTicks) * (await coreCount()),
      callsPerStep: Object.fromEntries(
        Object.entries(calls).map(([name, count]) => [name, count / steps]),
      ),
      factsPerStep: results.reduce((sum, result) => sum + result.facts, 0) / steps,
      xactsPerStep: (after.xacts - before.xacts) / steps,
      roundTripsPerStep: results.reduce((sum, result) => sum + result.roundTrips, 0) / steps,
    };
  } finally {
    for (const child of children)
      if (child.process.exitCode === null) child.process.kill('SIGKILL');
    await monitor.query(`DROP SCHEMA IF EXISTS ${throughputSchema} CASCADE`);
  }
}

async function coreCount(): Promise<number> {
  const { cpus } = await import('node:os');
  return cpus().length;
}

/**
 * Measures every configuration once per round, in a rotating order, each in a fresh schema with
 * fresh worker processes: the workers load the code and run one untimed conversation, then all
 * start at once; steps are counted in a window after a warm-up, while the parent samples the
 * server's CPU (the workers' backends, found by application name) and the machine's.
 */
export async function benchWorkerThroughput(
  options: ThroughputBenchOptions = {},
): Promise<ThroughputRow[]> {
  const configs = options.configs ?? defaultConfigs;
  const settings = {
    steps: options.steps ?? 20,
    warmupMs: options.warmupMs ?? 1_500,
    windowMs: options.windowMs ?? 4_000,
  };
  const monitor = new pg.Pool({ ...postgresConnection(), max: 1 });
  const samples = configs.map(() => [] as (ThroughputSample & { conversationMs: number[] })[]);
  try {
    for (let round = 0; round < (options.rounds ?? 3); round += 1) {
      for (let offset = 0; offset < configs.length; offset += 1) {
        const index = (offset + round) % configs.length;
        (samples[index] as ThroughputSample[]).push(
          await measureThroughput(configs[index] as WorkerConfig, settings, monitor, round),
        );
      }
    }
  } finally {
    await monitor.end();
  }
  return configs.map((config, index) => {
    const own = samples[index] as (ThroughputSample & { conversationMs: number[] })[];
    const of = (pick: (sample: ThroughputSample) => number) => median(own.map(pick));
    const names = [...new Set(own.flatMap((sample) => Object.keys(sample.callsPerStep)))];
    return {
      ...config,
      samples: own,
      stepsPerSecond: of((sample) => sample.stepsPerSecond),
      stepMs: of((sample) => sample.stepMs),
      workerCpuPerStep: of((sample) => sample.workerCpuPerStep),
      workerSystemPerStep: of((sample) => sample.workerSystemPerStep),
      serverCpuPerStep: of((sample) => sample.serverCpuPerStep),
      serverSystemPerStep: of((sample) => sample.serverSystemPerStep),
      backgroundCpuPerStep: of((sample) => sample.backgroundCpuPerStep),
      busyCores: of((sample) => sample.busyCores),
      callsPerStep: Object.fromEntries(
        names.map((name) => [name, of((sample) => sample.callsPerStep[name] ?? 0)]),
      ),
      factsPerStep: of((sample) => sample.factsPerStep),
      xactsPerStep: of((sample) => sample.xactsPerStep),
      roundTripsPerStep: of((sample) => sample.roundTripsPerStep),
    };
  });
}

/** Cores the workers and the server kept busy (CPU per step × steps/s), and the rest of the machine. */
function cores(row: ThroughputRow): string {
  const workers = (row.workerCpuPerStep * row.stepsPerSecond) / 1000;
  const server = ((row.serverCpuPerStep + row.backgroundCpuPerStep) * row.stepsPerSecond) / 1000;
  return `${workers.toFixed(2)} + ${server.toFixed(2)} + ${(row.busyCores - workers - server).toFixed(2)} = ${row.busyCores.toFixed(2)}`;
}

/** The throughput rows as a table. */
export function throughputTable(
  rows: ThroughputRow[],
  context: { loadStart: string; loadEnd: string; options?: ThroughputBenchOptions },
): BenchTable {
  const one =
    rows.find((row) => row.workers === 1 && row.inFlight === 4 && row.base === undefined) ??
    rows[0];
  const base = one?.stepsPerSecond ?? 1;
  const range = (values: number[]) =>
    `${Math.min(...values).toFixed(0)}–${Math.max(...values).toFixed(0)}`;
  return {
    title: `Workers on one PostgreSQL: steps per second, ${context.options?.steps ?? 20}-step tool conversation, zero-latency model`,
    columns: [
      'workers × runs in flight each',
      'steps/s (range)',
      'ratio to 1 × 4',
      'per step, wall',
      'worker CPU per step',
      'server CPU per step',
      'total CPU per step',
      '2 cores ÷ total CPU per step',
      'cores busy: workers + server + other processes',
      'appends / reads / other store calls per step',
      'transactions / round trips per step',
    ],
    rows: rows.map((row) => {
      const appends = row.callsPerStep.append ?? 0;
      const reads = row.callsPerStep.read ?? 0;
      const other = Object.entries(row.callsPerStep)
        .filter(([name]) => name !== 'append' && name !== 'read')
        .reduce((sum, [, count]) => sum + count, 0);
      const total = row.workerCpuPerStep + row.serverCpuPerStep + row.backgroundCpuPerStep;
      return [
        `${row.base === undefined ? '' : `${row.base.label}: `}${row.workers} × ${row.inFlight}`,
        `${row.stepsPerSecond.toFixed(0)} (${range(row.samples.map((sample) => sample.stepsPerSecond))})`,
        `${(row.stepsPerSecond / base).toFixed(2)}×`,
        formatMs(row.stepMs),
        `${formatMs(row.workerCpuPerStep)} (kernel ${formatMs(row.workerSystemPerStep)})`,
        `${formatMs(row.serverCpuPerStep + row.backgroundCpuPerStep)} (kernel ${formatMs(row.serverSystemPerStep)})`,
        formatMs(total),
        `${(2000 / total).toFixed(0)} steps/s`,
        cores(row),
        `${appends.toFixed(2)} / ${reads.toFixed(2)} / ${other.toFixed(2)}`,
        `${row.xactsPerStep.toFixed(2)} / ${row.roundTripsPerStep.toFixed(2)}`,
      ];
    }),
    notes: [
      `medians of ${context.options?.rounds ?? 3} rounds; each round measures every configuration once in a rotating order, each in a fresh schema with fresh worker processes (one process per worker, each with its own pg pool of 10 and leaseMs 15,000), counting the step.completed facts of a ${((context.options?.windowMs ?? 4_000) / 1000).toFixed(1)} s window after ${((context.options?.warmupMs ?? 1_500) / 1000).toFixed(1)} s of running`,
      "per step, wall: runs in flight ÷ steps per second (every run is always in a step); worker CPU: user + system of the worker processes; server CPU: the /proc CPU time of the PostgreSQL backends serving the workers (by application_name) plus the server background processes (WAL writer, checkpointer …, shared with other users of the server); cores busy: CPU per step × steps per second for the workers and the server, and what the rest of the machine (2 cores; other users' processes, this bench's parent) used in the window",
      "transactions: pg_stat_database's xact_commit + xact_rollback of the bench's database over the window (every user of that database counted: give the bench a database of its own with TURNLOG_BENCH_PG); round trips: the messages the workers' node-postgres clients sent (each `query` one round trip), LISTEN connections included",
      `load average (1, 5, 15 min): ${context.loadStart} at the start, ${context.loadEnd} at the end`,
    ],
  };
}

// ---------------------------------------------------------------------------------------------
// Takeover

/** Options of {@link benchTakeover}. */
export interface TakeoverBenchOptions {
  /** leaseMs values and the number of kills for each (default 500, 1,000, 2,000: 8; 15,000: 4). */
  leases?: { leaseMs: number; kills: number }[];
}

/** One kill. */
export interface TakeoverSample {
  scenario: 'tool' | 'stream';
  /** SIGKILL → the taker's first durable fact for the run, seen by a reader's subscription. */
  movedOnMs: number;
  /** SIGKILL → the lease's expiry (its `expires_at`, the last renewal + leaseMs). */
  expiryMs: number;
  /** The taker's facts in order (the first is what "moved on" means). */
  takerFacts: string[];
  /** SIGKILL → the taker's scan took the lease (its clock, printed by the taker). */
  takenMs: number;
  /** SIGKILL → `run.recovered` seen. */
  recoveredMs: number | undefined;
}

export interface TakeoverRow {
  leaseMs: number;
  samples: TakeoverSample[];
  /** Kills dropped because the run changed hands before the kill (the victim lost its lease). */
  discarded: number;
}

/**
 * Per leaseMs, one schema and one taker worker process (started first, alive throughout); per
 * kill a victim worker process that starts a run whose tool executes (or whose model stream
 * stalls), then, after a random delay in [0, leaseMs / 3) (a random phase of its renewals), its
 * SIGKILL; a reader in this process (postgresStore.subscribe on the session, subscribed before
 * the victim started) timestamps the taker's first fact. Kills of the leaseMs values interleave.
 */
export async function benchTakeover(options: TakeoverBenchOptions = {}): Promise<TakeoverRow[]> {
  const leases = options.leases ?? [
    { leaseMs: 500, kills: 6 },
    { leaseMs: 1_000, kills: 6 },
    { leaseMs: 2_000, kills: 6 },
    { leaseMs: 15_000, kills: 4 },
  ];
  const admin = new pg.Pool({ ...postgresConnection(), max: 1 });
  const sides = await Promise.all(
    leases.map(async ({ leaseMs }) => {
      const schema = `turnlog_bench_takeover_${leaseMs}`;
      await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      const reader = postgresStore({
        connectionString: connectionString('turnlog_bench_reader'),
        schema,
      });
      const takerId = `taker${leaseMs}`;
      const taker = startChild({
        mode: 'taker',
        connectionString: connectionString(`turnlog_bench_${takerId}`),
        schema,
        workerId: takerId,
        leaseMs,
      });
      await taker.line('ready');
      return { leaseMs, schema, reader, taker, takerId };
    }),
  );
  const rows: TakeoverRow[] = leases.map(({ leaseMs }) => ({ leaseMs, samples: [], discarded: 0 }));
  try {
    const rounds = Math.max(...leases.map((lease) => lease.kills));
    for (let round = 0; round < rounds; round += 1) {
      for (let offset = 0; offset < sides.length; offset += 1) {
        const index = (offset + round) % sides.length;
        if (round >= (leases[index]?.kills ?? 0)) continue;
        const side = sides[index] as (typeof sides)[number];
        const row = rows[index] as TakeoverRow;
        const sample = await killOnce(side, round, round % 2 === 0 ? 'tool' : 'stream');
        if (sample === undefined) row.discarded += 1;
        else row.samples.push(sample);
      }
    }
  } finally {
    for (const side of sides) {
      side.taker.process.stdin?.end();
      await Promise.race([side.taker.exited, sleep(5_000)]);
      if (side.taker.process.exitCode === null) side.taker.process.kill('SIGKILL');
      await side.reader.close();
      await admin.query(`DROP SCHEMA IF EXISTS ${side.schema} CASCADE`);
    }
    await admin.end();
  }
  return rows;
}

async function killOnce(
  side: {
    leaseMs: number;
    schema: string;
    reader: ReturnType<typeof postgresStore>;
    taker: Child;
    takerId: string;
  },
  round: number,
  scenario: 'tool' | 'stream',
): Promise<TakeoverSample | undefined> {
  const { leaseMs, reader, takerId } = side;
  const sessionId = `kill_${round}`;
  const arrivals: { fact: Fact; at: number }[] = [];
  let wake: () => void = () => {};
  const unsubscribe = reader.subscribe(sessionId, (fact) => {
    arrivals.push({ fact, at: performance.now() });
    wake();
  });
  // A read after subscribe waits until the subscription is live (LISTEN active, start read).
  await reader.read(sessionId);
  const victimId = `victim${leaseMs}_${round}`;
  const victim = startChild({
    mode: 'victim',
    connectionString: connectionString(`turnlog_bench_${victimId}`),
    schema: side.schema,
    workerId: victimId,
    leaseMs,
    sessionId,
    scenario,
  });
  try {
    const runId = await victim.line('started ');
    await sleep(Math.random() * (leaseMs / 3));
    if (arrivals.some(({ fact }) => fact.workerId !== victimId)) return undefined;
    const killedAt = performance.now();
    const killedWall = Date.now();
    victim.process.kill('SIGKILL');
    await victim.exited;
    // A renewal already sent may still commit: read the lease once it cannot change any more.
    await sleep(Math.min(50, leaseMs / 10));
    const lease = await reader.leaseOf({ sessionId, runId });
    const deadline = killedAt + 3 * leaseMs + 10_000;
    const taker = () => arrivals.filter(({ fact }) => fact.workerId === takerId);
    while (taker().length === 0 || !taker().some(({ fact }) => fact.type === 'run.recovered')) {
      if (performance.now() > deadline)
        throw new Error(`takeover ${leaseMs}: no run.recovered by the taker`);
      await new Promise<void>((resolve) => {
        wake = resolve;
        setTimeout(resolve, 100);
      });
    }
    if (arrivals.some(({ fact, at }) => fact.workerId !== victimId && at < killedAt))
      return undefined;
    const [first] = taker();
    const took = side.taker.seen.find((line) => line.startsWith(`took ${runId} `));
    const recovered = taker().find(({ fact }) => fact.type === 'run.recovered');
    return {
      scenario,
      movedOnMs: (first?.at ?? Number.NaN) - killedAt,
      expiryMs:
        lease === undefined || lease.workerId !== victimId
          ? Number.NaN
          : lease.expiresAtMs - killedWall,
      takenMs: took === undefined ? Number.NaN : Number(took.split(' ')[2]) - killedWall,
      takerFacts: taker().map(({ fact }) => fact.type),
      recoveredMs: recovered === undefined ? undefined : recovered.at - killedAt,
    };
  } finally {
    unsubscribe();
    if (victim.process.exitCode === null && victim.process.signalCode === null) {
      victim.process.kill('SIGKILL');
    }
  }
}

/** The takeover rows as a table, against the design's prediction. */
export function takeoverTable(
  rows: TakeoverRow[],
  context: { loadStart: string; loadEnd: string },
): BenchTable {
  const spread = (values: number[]) =>
    values.length === 0
      ? '–'
      : `${formatMs(median(values))} (${formatMs(Math.min(...values))}–${formatMs(Math.max(...values))})`;
  return {
    title: "A dead worker's run moving on: SIGKILL → another worker's first durable fact for it",
    columns: [
      'leaseMs',
      'kills',
      'kill → moved on: median (min–max)',
      '÷ leaseMs: median (min–max)',
      'predicted: 0.67–1.25 × leaseMs',
      'kill → lease expired',
      'expired → taken over (scan)',
      'taken over → moved on',
    ],
    rows: rows.map((row) => {
      const moved = row.samples.map((sample) => sample.movedOnMs);
      const ratios = moved.map((value) => value / row.leaseMs);
      const inside = ratios.filter((ratio) => ratio >= 2 / 3 && ratio <= 1.25).length;
      const expiry = row.samples.map((sample) => sample.expiryMs).filter(Number.isFinite);
      const scan = row.samples
        .filter((sample) => Number.isFinite(sample.expiryMs) && Number.isFinite(sample.takenMs))
        .map((sample) => sample.takenMs - sample.expiryMs);
      const rehydration = row.samples
        .filter((sample) => Number.isFinite(sample.takenMs))
        .map((sample) => sample.movedOnMs - sample.takenMs);
      return [
        row.leaseMs.toLocaleString('en-US'),
        `${row.samples.length}${row.discarded > 0 ? ` (+${row.discarded} discarded)` : ''}`,
        spread(moved),
        ratios.length === 0
          ? '–'
          : `${median(ratios).toFixed(2)} (${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)})`,
        `${formatMs((2 / 3) * row.leaseMs)}–${formatMs(1.25 * row.leaseMs)}: ${inside} of ${ratios.length} inside`,
        spread(expiry),
        spread(scan),
        spread(rehydration),
      ];
    }),
    notes: [
      "per kill: a new worker process (the victim) starts a run on the leaseMs's own schema and is SIGKILLed a random [0, leaseMs/3) after its `work` tool began executing (odd kills: after its model stream, which then stalls, sent its first text); one taker worker per leaseMs, alive throughout, does the takeover; the kills of the four leaseMs values interleave",
      "moved on: the taker's first fact for the run (tool.indeterminate after a tool kill, run.recovered after a stream kill) as a reader in the bench process receives it from postgresStore.subscribe (LISTEN/NOTIFY and a catch-up read included)",
      "kill → lease expired: the lease's expires_at (the database's clock: last renewal + leaseMs) read after the kill, minus the kill's time (same machine clock); expired → taken over: until the taker's takeover scan (every leaseMs/4 ±25 %) returned the lease (the taker prints the time); taken over → moved on: rehydration (a read and a fold of the run), the commit of the first fact, the notification to the reader",
      `load average (1, 5, 15 min): ${context.loadStart} at the start, ${context.loadEnd} at the end`,
    ],
  };
}

/** With TURNLOG_BENCH_RAW=<folder>, every sample as JSON (workers-<part>.json) for analysis. */
async function dumpRaw(part: string, rows: unknown): Promise<void> {
  const folder = process.env.TURNLOG_BENCH_RAW;
  if (folder === undefined || folder === '') return;
  const { writeFile } = await import('node:fs/promises');
  await writeFile(`${folder}/workers-${part}.json`, JSON.stringify(rows, null, 2));
}

/** Both parts' tables (npm run bench -- workers). */
export async function workersTables(
  parts: readonly ('throughput' | 'takeover')[] = ['throughput', 'takeover'],
  throughput: ThroughputBenchOptions = {},
): Promise<BenchTable[]> {
  const tables: BenchTable[] = [];
  if (parts.includes('throughput')) {
    const loadStart = load();
    const rows = await benchWorkerThroughput(throughput);
    await dumpRaw('throughput', rows);
    tables.push(throughputTable(rows, { loadStart, loadEnd: load(), options: throughput }));
  }
  if (parts.includes('takeover')) {
    const loadStart = load();
    const rows = await benchTakeover();
    await dumpRaw('takeover', rows);
    tables.push(takeoverTable(rows, { loadStart, loadEnd: load() }));
  }
  return tables;
}

/**
 * The throughput options of the command line: `--configs=1x4,1x64` (workers × runs in flight),
 * `--rounds=3`, `--window-ms=4000`, and `--base=<checkout>[:label]`, which measures each configuration with another
 * checkout of turnlog too (e.g. `git archive 88b6cc3 | tar -x -C /tmp/base`, node_modules linked).
 */
function throughputOptions(args: readonly string[]): ThroughputBenchOptions {
  const value = (name: string) =>
    args.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3);
  const options: ThroughputBenchOptions = {};
  const configs = value('configs')
    ?.split(',')
    .map((text) => {
      const [workers, inFlight] = text.split('x').map(Number);
      return { workers: workers ?? 1, inFlight: inFlight ?? 4 };
    });
  if (configs !== undefined) options.configs = configs;
  const rounds = value('rounds');
  if (rounds !== undefined) options.rounds = Number(rounds);
  const windowMs = value('window-ms');
  if (windowMs !== undefined) options.windowMs = Number(windowMs);
  const base = value('base');
  if (base !== undefined) {
    const [root = base, label = 'before'] = base.split(':');
    options.configs = (options.configs ?? defaultConfigs).flatMap((config) => [
      { ...config, base: { root: path.resolve(root), label } },
      config,
    ]);
  }
  return options;
}

if (import.meta.main) {
  const args = process.argv.slice(2);
  const parts = args.filter((arg) => !arg.startsWith('--')) as ('throughput' | 'takeover')[];
  const tables = await workersTables(parts.length > 0 ? parts : undefined, throughputOptions(args));
  for (const table of tables) console.log(`${formatTable(table)}\n`);
}
