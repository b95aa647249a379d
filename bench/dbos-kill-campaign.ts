// A side-by-side kill campaign (issue 26): the benchmarks' 20-step tool conversation on turnlog
// (postgresStore) and as a DBOS workflow, in a process (bench/dbos-kill-child.ts) SIGKILLed at
// seeded random moments and started again, until every run has ended. The `add` tool's side
// effect is a ledger row written outside both systems, so a call whose effect ran twice is
// counted from the ledger, not from either system's own records. Run by hand (not in npm test):
//   npx node bench/dbos-kill-campaign.ts [--runs 24] [--kills 40] [--seed 1]
//     [--systems dbos,turnlog,turnlog-reconcile] [--in-flight 4] [--max-delay-ms 1500]
//     [--tool-ms 5] [--lease-ms 2000]
// Prints a markdown table (bench/RESULTS.md, "Issue 26: DBOS side by side").
import { type ChildProcess, spawn } from 'node:child_process';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import type { Fact } from '../events/facts.ts';
import { postgresStore } from '../store/postgres/postgres-store.ts';
import { seededRandom } from '../test/crash/crash-harness.ts';
import { dbosSystemDatabaseUrl } from './dbos-agent.ts';
import type { KillChildOptions } from './dbos-kill-child.ts';
import { type BenchTable, formatTable } from './table.ts';

const childFile = fileURLToPath(new URL('./dbos-kill-child.ts', import.meta.url));
type System = KillChildOptions['system'];

/** The campaign's settings. */
export interface KillCampaignOptions {
  systems: System[];
  runs: number;
  /** SIGKILLs per system; after the last one, the process runs until every run has ended. */
  kills: number;
  seed: number;
  inFlight: number;
  steps: number;
  /** Each kill lands a uniform random 20 ms … this long after the process printed `ready`. */
  maxDelayMs: number;
  toolMs: number;
  leaseMs: number;
}

const names = {
  ledgerSchema: 'dbos_kill_ledger',
  dbosDatabase: 'turnlog_dbos_kill',
  turnlogSchema: (system: System) => `dbos_kill_${system.replaceAll('-', '_')}`,
};

function connectionString(): string {
  return dbosSystemDatabaseUrl('test');
}

/** One system's counts. */
export interface KillCampaignRow {
  system: System;
  runs: number;
  kills: number;
  /** Processes started (the first, and one after each kill). */
  starts: number;
  /** Runs that ended exactly once, and how (completed for every run, when all is well). */
  endedOnce: number;
  completed: number;
  /** Runs the process reported failed (an error from the system), never expected. */
  failed: string[];
  toolCalls: number;
  /** Calls whose side effect ran once, twice or more, never (per the ledger). */
  effectOnce: number;
  effectTwice: number;
  /** Executions beyond the first, over every call. */
  extraExecutions: number;
  effectNever: number;
  /** turnlog: `tool.indeterminate` facts (a call cut again while being recovered has several). */
  indeterminateFacts: number;
  /**
   * turnlog: calls a kill cut (`tool.indeterminate`), and how each was answered: by a person
   * (no check of its own: the campaign answers `report-unknown`) or by its `reconcile`.
   */
  indeterminate: number;
  answeredByPerson: number;
  reconciledDone: number;
  reconciledNotDone: number;
  /** Of the calls a person answered, how many had run (a ledger row) and how many had not. */
  personCallsThatRan: number;
  /**
   * Calls a kill cut after their side effect and before the system recorded their end: turnlog's
   * cut calls with a ledger row; for DBOS, every execution beyond a call's first (the one before
   * it was cut after its effect).
   */
  cutAfterEffect: number;
  wallMs: number;
}

/** A child process, with the lines it printed. */
function startChild(options: KillChildOptions) {
  const child: ChildProcess = spawn(process.execPath, [childFile, JSON.stringify(options)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  let stderr = '';
  let buffered = '';
  let onReady: (() => void) | undefined;
  const ready = new Promise<void>((resolve) => {
    onReady = resolve;
  });
  child.stdout?.setEncoding('utf8');
  child.stdout?.on('data', (chunk: string) => {
    buffered += chunk;
    for (let end = buffered.indexOf('\n'); end >= 0; end = buffered.indexOf('\n')) {
      const line = buffered.slice(0, end);
      buffered = buffered.slice(end + 1);
      lines.push(line);
      if (line === 'ready') onReady?.();
    }
  });
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-4000);
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, lines, ready, exited, stderr: () => stderr };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Empties what a system's campaign writes: its ledger rows, its turnlog schema, DBOS's tables. */
async function reset(pool: pg.Pool, system: System): Promise<void> {
  await pool.query(`CREATE SCHEMA IF NOT EXISTS ${names.ledgerSchema}`);
  await pool.query(
    `CREATE TABLE IF NOT EXISTS ${names.ledgerSchema}.ledger (system text NOT NULL, run_id text NOT NULL, call_id text NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp())`,
  );
  await pool.query(`DELETE FROM ${names.ledgerSchema}.ledger WHERE system = $1`, [system]);
  if (system !== 'dbos') {
    await pool.query(`DROP SCHEMA IF EXISTS ${names.turnlogSchema(system)} CASCADE`);
    return;
  }
  const admin = new pg.Client({ connectionString: dbosSystemDatabaseUrl('postgres') });
  await admin.connect();
  const found = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [
    names.dbosDatabase,
  ]);
  if (found.rowCount === 0) await admin.query(`CREATE DATABASE ${names.dbosDatabase}`);
  await admin.end();
  const dbos = new pg.Client({ connectionString: dbosSystemDatabaseUrl(names.dbosDatabase) });
  await dbos.connect();
  await dbos.query('DROP SCHEMA IF EXISTS dbos CASCADE');
  await dbos.end();
}

/** Runs one system's campaign: start, kill at random, start again, until the child says done. */
async function killLoop(options: KillCampaignOptions, system: System, runIds: string[]) {
  const random = seededRandom(options.seed);
  const childOptions: KillChildOptions = {
    system,
    runIds,
    inFlight: options.inFlight,
    steps: options.steps,
    toolMs: options.toolMs,
    connectionString: connectionString(),
    turnlogSchema: names.turnlogSchema(system),
    ledgerSchema: names.ledgerSchema,
    dbosDatabase: names.dbosDatabase,
    leaseMs: options.leaseMs,
  };
  let kills = 0;
  let starts = 0;
  const lines: string[] = [];
  for (;;) {
    const child = startChild(childOptions);
    starts += 1;
    if (kills < options.kills) {
      const delay = 20 + random() * (options.maxDelayMs - 20);
      const outcome = await Promise.race([
        child.ready.then(() => sleep(delay)).then(() => 'kill' as const),
        child.exited.then(() => 'exited' as const),
      ]);
      if (outcome === 'kill') {
        child.child.kill('SIGKILL');
        await child.exited;
        kills += 1;
        lines.push(...child.lines);
        continue;
      }
    }
    const code = await child.exited;
    lines.push(...child.lines);
    if (code === 0 && child.lines.includes('done')) break;
    throw new Error(`${system} child exited ${code} without finishing: ${child.stderr()}`);
  }
  return { kills, starts, lines };
}

/** Counts every run's outcome and every call's executions, from the ledger and each system's records. */
async function count(
  pool: pg.Pool,
  system: System,
  runIds: string[],
  options: KillCampaignOptions,
): Promise<Omit<KillCampaignRow, 'kills' | 'starts' | 'failed' | 'wallMs'>> {
  const ledgerRows = await pool.query<{ run_id: string; call_id: string; n: string }>(
    `SELECT run_id, call_id, count(*) AS n FROM ${names.ledgerSchema}.ledger WHERE system = $1 GROUP BY run_id, call_id`,
    [system],
  );
  const executions = new Map(
    ledgerRows.rows.map((row) => [`${row.run_id} ${row.call_id}`, Number(row.n)]),
  );
  const toolCalls = options.runs * (options.steps - 1);
  const counts = [...executions.values()];
  const effects = {
    toolCalls,
    effectOnce: counts.filter((n) => n === 1).length,
    effectTwice: counts.filter((n) => n > 1).length,
    extraExecutions: counts.reduce((sum, n) => sum + n - 1, 0),
    effectNever: toolCalls - counts.length,
  };
  const none = {
    indeterminate: 0,
    indeterminateFacts: 0,
    answeredByPerson: 0,
    reconciledDone: 0,
    reconciledNotDone: 0,
    personCallsThatRan: 0,
    cutAfterEffect: 0,
  };
  if (system === 'dbos') {
    const dbos = new pg.Client({ connectionString: dbosSystemDatabaseUrl(names.dbosDatabase) });
    await dbos.connect();
    const statuses = await dbos.query<{ status: string; n: string }>(
      'SELECT status, count(*) AS n FROM dbos.workflow_status WHERE workflow_uuid = ANY($1) GROUP BY status',
      [runIds],
    );
    await dbos.end();
    const success = Number(statuses.rows.find((row) => row.status === 'SUCCESS')?.n ?? 0);
    // A workflow has one status row: its outcome is recorded once, by design.
    return {
      system,
      runs: runIds.length,
      endedOnce: success,
      completed: success,
      ...effects,
      ...none,
    };
  }
  const store = postgresStore({
    connectionString: connectionString(),
    schema: names.turnlogSchema(system),
  });
  const tally = { endedOnce: 0, completed: 0, ...none };
  for (const runId of runIds) {
    const facts = await store.read(runId);
    const ended = facts.filter((fact) => fact.type === 'run.ended');
    if (ended.length === 1) tally.endedOnce += 1;
    if (ended.length === 1 && ended[0]?.type === 'run.ended' && ended[0].status === 'completed') {
      tally.completed += 1;
    }
    const calls = tallyCalls(facts, (callId) => executions.get(`${runId} ${callId}`) ?? 0);
    for (const key of Object.keys(none) as (keyof typeof none)[]) tally[key] += calls[key];
  }
  await store.close();
  return { system, runs: runIds.length, ...tally, ...effects };
}

/**
 * One turnlog run's cut calls, counted once each (a call cut again during its recovery gets
 * another `tool.indeterminate`): how many, how its `reconcile` last answered, whether it waited
 * for a person and, if so, whether it had run (`executions`: its ledger rows).
 */
export function tallyCalls(facts: readonly Fact[], executions: (callId: string) => number) {
  const cut = new Set<string>();
  const person = new Set<string>();
  const answers = new Map<string, string>();
  let indeterminateFacts = 0;
  for (const fact of facts) {
    if (fact.type === 'tool.indeterminate') {
      indeterminateFacts += 1;
      cut.add(fact.callId);
      // No check of its own: the run waits for a person (the campaign answers report-unknown).
      if (fact.check === undefined) person.add(fact.callId);
    }
    if (fact.type === 'tool.reconciled') answers.set(fact.callId, fact.answer);
  }
  const answered = [...answers.values()];
  return {
    indeterminate: cut.size,
    indeterminateFacts,
    answeredByPerson: person.size,
    reconciledDone: answered.filter((answer) => answer === 'done').length,
    reconciledNotDone: answered.filter((answer) => answer === 'not-done').length,
    personCallsThatRan: [...person].filter((callId) => executions(callId) > 0).length,
    // Its effect had happened when it was cut: its reconcile found it done, or (no reconcile
    // answer) it has a ledger row — it never ran again, so the row is from before the cut.
    cutAfterEffect: [...cut].filter((callId) =>
      answers.has(callId) ? answers.get(callId) === 'done' : executions(callId) > 0,
    ).length,
  };
}

/** Runs the campaign for every system, one after the other, with the same seed. */
export async function runKillCampaign(options: KillCampaignOptions): Promise<KillCampaignRow[]> {
  const pool = new pg.Pool({ connectionString: connectionString(), max: 2 });
  const rows: KillCampaignRow[] = [];
  try {
    for (const system of options.systems) {
      await reset(pool, system);
      const runIds = Array.from(
        { length: options.runs },
        (_, index) => `kill-${system}-${options.seed}-${index + 1}`,
      );
      const started = performance.now();
      const { kills, starts, lines } = await killLoop(options, system, runIds);
      const wallMs = performance.now() - started;
      const counted = await count(pool, system, runIds, options);
      rows.push({
        ...counted,
        kills,
        starts,
        wallMs,
        failed: lines.filter((line) => line.startsWith('failed ')),
      });
    }
  } finally {
    await pool.end();
  }
  return rows;
}

/** The rows as a table: one column per system. */
export function killCampaignTable(
  rows: KillCampaignRow[],
  options: KillCampaignOptions,
  load: { start: number[]; end: number[] },
): BenchTable {
  const metric = (label: string, cell: (row: KillCampaignRow) => string) => [
    label,
    ...rows.map(cell),
  ];
  const loads = (values: number[]) => values.map((value) => value.toFixed(1)).join(', ');
  return {
    title: `Side-by-side kill campaign: ${options.runs} runs of the ${options.steps}-step tool conversation per system, ${options.kills} SIGKILLs, seed ${options.seed}`,
    columns: ['', ...rows.map((row) => row.system)],
    rows: [
      metric('process starts (1 + kills)', (row) => `${row.starts} (${row.kills} kills)`),
      metric('runs that ended exactly once', (row) => `${row.endedOnce} of ${row.runs}`),
      metric('runs completed', (row) => `${row.completed}`),
      metric('runs failed', (row) => `${row.failed.length}`),
      metric('tool calls', (row) => `${row.toolCalls}`),
      metric('calls a kill cut after their side effect, before the system recorded it', (row) =>
        row.system === 'dbos' ? `${row.extraExecutions}` : `${row.cutAfterEffect}`,
      ),
      metric('calls whose side effect ran twice or more', (row) => `${row.effectTwice}`),
      metric('extra executions in all', (row) => `${row.extraExecutions}`),
      metric('calls whose side effect never ran', (row) => `${row.effectNever}`),
      metric('calls a kill cut while running (tool.indeterminate)', (row) =>
        row.system === 'dbos' ? '-' : `${row.indeterminate} (${row.indeterminateFacts} facts)`,
      ),
      metric('… answered by reconcile: had run / had not', (row) =>
        row.system === 'dbos' ? '-' : `${row.reconciledDone} / ${row.reconciledNotDone}`,
      ),
      metric('… needed a person (report-unknown)', (row) =>
        row.system === 'dbos' ? '-' : `${row.answeredByPerson} (${row.personCallsThatRan} had run)`,
      ),
      metric('wall time', (row) => `${(row.wallMs / 1000).toFixed(0)} s`),
    ],
    notes: [
      `command: npx node bench/dbos-kill-campaign.ts --runs ${options.runs} --kills ${options.kills} --seed ${options.seed} --systems ${options.systems.join(',')} --in-flight ${options.inFlight} --max-delay-ms ${options.maxDelayMs} --tool-ms ${options.toolMs} --lease-ms ${options.leaseMs}`,
      `load average (1, 5, 15 min): ${loads(load.start)} at the start, ${loads(load.end)} at the end`,
      `each process runs ${options.inFlight} runs at a time; each kill lands a uniform 20–${options.maxDelayMs} ms after the process is ready (seeded); after the last kill it runs until every run has ended`,
      `the tool's side effect: a ledger row (system, run, call) committed outside both systems, then ${options.toolMs} ms before it returns; "ran twice" counts calls with two or more rows; a seed fixes the kill delays, not what they hit (that depends on the machine's load)`,
      `turnlog: a worker with leaseMs ${options.leaseMs} on postgresStore; after a restart, recover() and the takeover scan resume the runs; an indeterminate call of turnlog is answered report-unknown by the campaign (a person), of turnlog-reconcile by its reconcile (a ledger lookup)`,
      'DBOS: DBOS.launch() in the restarted process recovers its pending workflows; a step interrupted after its effect and before its checkpoint runs again (at-least-once steps, as DBOS documents)',
    ],
  };
}

if (import.meta.main) {
  const { values } = parseArgs({
    options: {
      runs: { type: 'string', default: '24' },
      kills: { type: 'string', default: '40' },
      seed: { type: 'string', default: '1' },
      systems: { type: 'string', default: 'dbos,turnlog,turnlog-reconcile' },
      'in-flight': { type: 'string', default: '4' },
      'max-delay-ms': { type: 'string', default: '1500' },
      'tool-ms': { type: 'string', default: '5' },
      'lease-ms': { type: 'string', default: '2000' },
    },
  });
  const options: KillCampaignOptions = {
    systems: values.systems.split(',') as System[],
    runs: Number(values.runs),
    kills: Number(values.kills),
    seed: Number(values.seed),
    inFlight: Number(values['in-flight']),
    steps: 20,
    maxDelayMs: Number(values['max-delay-ms']),
    toolMs: Number(values['tool-ms']),
    leaseMs: Number(values['lease-ms']),
  };
  const start = loadavg();
  const rows = await runKillCampaign(options);
  console.log(formatTable(killCampaignTable(rows, options, { start, end: loadavg() })));
  for (const row of rows) for (const line of row.failed) console.log(`${row.system}: ${line}`);
}
