// Runs every benchmark and prints one markdown table per benchmark (npm run bench).
// Pick some by name: npm run bench -- overhead log-size
// Names: adapter, store, overhead, telemetry, postgres-store, workers, session-length, log-size,
// rehydration, parked-memory, live-replay, deploy-check, retention, open-runs, dbos,
// million-parked, large-output-lease.
import { loadavg } from 'node:os';
import { adapterTable, benchAdapter } from './adapter.ts';
import { benchDbosPerStep, dbosPerStepTable } from './dbos-per-step.ts';
import { benchDeployCheck, deployCheckTable } from './deploy-check.ts';
import { benchLargeOutputLease, largeOutputLeaseTable } from './large-output-lease.ts';
import { benchLiveReplay, liveReplayTable } from './live-replay-memory.ts';
import { benchLogSize, logSizeTable } from './log-size.ts';
import { describeMachine } from './machine.ts';
import { benchMillionParked, millionTable } from './million-parked.ts';
import {
  benchOpenRuns,
  benchPostgresOpenRuns,
  openRunsTable,
  postgresOpenRunsTable,
} from './open-runs.ts';
import { benchOverhead, overheadTable } from './overhead.ts';
import { benchParkedMemory, parkedMemoryTable } from './parked-memory.ts';
import { benchPostgresStore, postgresStoreTable } from './postgres-store.ts';
import { benchRehydration, rehydrationTable } from './rehydration.ts';
import { benchRetention, retentionTable } from './retention.ts';
import { benchSessionLength, sessionLengthTable } from './session-length.ts';
import { benchStore } from './store.ts';
import { type BenchTable, formatMs, formatTable } from './table.ts';
import { benchTelemetryOverhead, telemetryTable } from './telemetry-overhead.ts';
import { workersTables } from './workers.ts';

const benchmarks: Record<string, () => Promise<BenchTable | BenchTable[]>> = {
  adapter: async () => adapterTable(await benchAdapter()),
  async store() {
    const rows = await benchStore();
    return {
      title: 'lowdbStore: append latency, throughput, cold read',
      columns: ['metric', 'value', 'target'],
      rows: rows.map((row) => [
        row.metric,
        row.unit === 'ms' ? formatMs(row.value) : `${row.value.toFixed(0)} ${row.unit}`,
        row.target ?? '',
      ]),
    };
  },
  overhead: async () => overheadTable(await benchOverhead()),
  // Tracing and metrics on and off, per step (issue 27).
  telemetry: async () => telemetryTable(await benchTelemetryOverhead()),
  'postgres-store': async () => postgresStoreTable(await benchPostgresStore()),
  // Per step with one run: turnlog, a DBOS workflow and PostgresSaver on one server (issue 26).
  dbos: async () => dbosPerStepTable(await benchDbosPerStep()),
  // Steps per second with 1, 2 and 4 worker processes; a dead worker's run moving on.
  workers: () => workersTables(),
  'session-length': async () => sessionLengthTable(await benchSessionLength()),
  'log-size': async () => logSizeTable(await benchLogSize()),
  rehydration: async () => rehydrationTable(await benchRehydration()),
  'parked-memory': async () => parkedMemoryTable(await benchParkedMemory()),
  // A live run's replay and its resume streams: folded deltas against every delta kept (issue 29).
  'live-replay': async () => liveReplayTable(await benchLiveReplay()),
  // The deploy check over 10,000 and 100,000 parked runs (issue 28).
  'deploy-check': async () => deployCheckTable(await benchDeployCheck()),
  // openRuns() after a reopen, the tail summary checked against the log (issue 29, item 10).
  'open-runs': async () => openRunsTable(await benchOpenRuns()),
  // postgresStore's openRuns(): the runs index checked against the facts, 10,000 sessions.
  'open-runs-pg': async () => postgresOpenRunsTable(await benchPostgresOpenRuns()),
  // Purging 100,000 ended sessions on lowdbStore and postgresStore (issue 27).
  retention: async () => retentionTable(await benchRetention()),
  // A worker against 1,000 and 1,000,000 parked runs in one database (issue 26, item 5).
  'million-parked': async () => millionTable(await benchMillionParked()),
  // A 50 MB tool output under a 1 s and a 3 s lease, renewed from the loop and from the thread (issue 26, defect 5).
  'large-output-lease': async () => largeOutputLeaseTable(await benchLargeOutputLease()),
};

const requested = process.argv.slice(2);
const unknown = requested.filter((name) => !(name in benchmarks));
if (unknown.length > 0) {
  console.error(
    `bench: unknown benchmark ${unknown.join(', ')}; choose from ${Object.keys(benchmarks).join(', ')}`,
  );
  process.exit(2);
}

console.log(`## turnlog benchmarks, ${new Date().toISOString().slice(0, 10)}\n`);
for (const line of await describeMachine()) console.log(`- ${line}`);
console.log(`- command: npm run bench${requested.length > 0 ? ` -- ${requested.join(' ')}` : ''}`);
// Other processes on the machine skew absolute times (interleaving protects the ratios).
const load = () =>
  loadavg()
    .map((value) => value.toFixed(2))
    .join(', ');
console.log(`- load average at start (1, 5, 15 min): ${load()}`);
for (const name of requested.length > 0 ? requested : Object.keys(benchmarks)) {
  const started = performance.now();
  const result = await (benchmarks[name] as () => Promise<BenchTable | BenchTable[]>)();
  for (const table of Array.isArray(result) ? result : [result]) {
    console.log(`\n${formatTable(table)}`);
  }
  console.log(
    `\n(${name}: ${((performance.now() - started) / 1000).toFixed(1)} s; load average after: ${load()})`,
  );
}
