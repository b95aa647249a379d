// Benchmarks lowdbStore: append latency at two session lengths, small appends after a 10 MB fact
// against an empty session (interleaved), throughput with 16 concurrent sessions, and a cold
// read + projectHistory of a 10,000-fact session.
// Run: npx node bench/store.ts
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { NewFact } from '../events/facts.ts';
import { projectHistory } from '../events/project-history.ts';
import type { EventStore } from '../store/event-store.ts';
import { lowdbStore } from '../store/folder/lowdb-store.ts';
import { fill, limits } from './store-workload.ts';

/** One measured number of the store benchmark. */
export interface StoreBenchRow {
  metric: string;
  value: number;
  unit: string;
  /** The target, in words, when the brief sets one. */
  target?: string;
}

/** Options of `benchStore`. */
export interface StoreBenchOptions {
  /** Folder for the store (default: a fresh temp folder, removed afterwards). */
  dir?: string;
  /** Timed single-fact appends per median (default 100). */
  samples?: number;
  /** Appends per session in the 16-session throughput run (default 100). */
  concurrentAppends?: number;
}

/**
 * Measures `lowdbStore` and returns the rows; `bench/run.ts` can call it.
 *
 * @example
 * const rows = await benchStore();
 * console.table(rows);
 */
export async function benchStore(options: StoreBenchOptions = {}): Promise<StoreBenchRow[]> {
  const dir = options.dir ?? (await mkdtemp(path.join(tmpdir(), 'turnlog-bench-')));
  const samples = options.samples ?? 100;
  try {
    let store = lowdbStore({ dir });
    const big = await appendsAfterBigFact(store, samples);
    await fill(store, 'short', 100);
    await fill(store, 'long', 10_000);
    for (const sessionId of ['short', 'long']) await startRun(store, sessionId);
    const [shortTimes = [], longTimes = []] = await interleavedAppends(
      store,
      ['short', 'long'],
      samples,
    );
    const short = percentile(shortTimes, 0.5);
    const long = percentile(longTimes, 0.5);
    const throughput = await concurrentThroughput(store, 16, options.concurrentAppends ?? 100);
    await fill(store, 'cold', 10_000);
    await store.close();

    store = lowdbStore({ dir });
    const started = performance.now();
    const facts = await store.read('cold');
    const readMs = performance.now() - started;
    const messages = projectHistory(facts, { provider: 'openai.responses' });
    const totalMs = performance.now() - started;
    await store.close();
    if (messages.length === 0)
      throw new Error('bench: the projection of the cold session is empty');

    return [
      { metric: 'append of one 10 MB fact', value: big.bigMs, unit: 'ms' },
      { metric: 'median small append, empty session', value: big.emptyMedian, unit: 'ms' },
      {
        metric: 'median small append after the 10 MB fact',
        value: big.afterMedian,
        unit: 'ms',
        target: `<= 2x the empty session's (${(big.afterMedian / big.emptyMedian).toFixed(2)}x)`,
      },
      {
        metric: '90th percentile small append after the 10 MB fact',
        value: big.afterP90,
        unit: 'ms',
        target: `empty session's: ${big.emptyP90.toFixed(2)} ms (${(big.afterP90 / big.emptyP90).toFixed(2)}x)`,
      },
      { metric: 'median append, session of 100', value: short, unit: 'ms' },
      {
        metric: 'median append, session of 10,000',
        value: long,
        unit: 'ms',
        target: `<= 2x the first (${(long / short).toFixed(2)}x)`,
      },
      { metric: 'appends/s, 16 concurrent sessions', value: throughput, unit: '/s' },
      { metric: `cold read of ${facts.length} facts`, value: readMs, unit: 'ms' },
      {
        metric: `cold read + projectHistory (${messages.length} messages)`,
        value: totalMs,
        unit: 'ms',
        target: '< 250 ms',
      },
    ];
  } finally {
    if (options.dir === undefined) await rm(dir, { recursive: true, force: true });
  }
}

/**
 * A 10 MB fact, then `samples` small appends after it, interleaved with small appends to an
 * empty session (same segment size): an append must cost the same whatever the segment holds.
 */
async function appendsAfterBigFact(store: EventStore, samples: number) {
  const huge: NewFact = {
    ...envelope('big', 'big_huge'),
    type: 'steering.received',
    messageId: 'message_huge',
    text: 'x'.repeat(10 * 1024 * 1024),
  };
  await startRun(store, 'big');
  await startRun(store, 'empty');
  const started = performance.now();
  await store.append('big', [huge]);
  const bigMs = performance.now() - started;
  const [empty = [], after = []] = await interleavedAppends(store, ['empty', 'big'], samples);
  return {
    bigMs,
    emptyMedian: percentile(empty, 0.5),
    afterMedian: percentile(after, 0.5),
    emptyP90: percentile(empty, 0.9),
    afterP90: percentile(after, 0.9),
  };
}

/**
 * `samples` awaited one-fact appends (steering facts into the run `startRun` began) to each
 * session, taking turns, so the sessions see the same machine load: the time of each, per session.
 */
async function interleavedAppends(
  store: EventStore,
  sessionIds: readonly string[],
  samples: number,
): Promise<number[][]> {
  const times = sessionIds.map((): number[] => []);
  for (let index = 0; index < samples; index += 1) {
    for (const [position, sessionId] of sessionIds.entries()) {
      const fact: NewFact = {
        ...envelope(sessionId, `${sessionId}_small_${index}`),
        type: 'steering.received',
        messageId: `message_${index}`,
        text: 'Also check the changelog, please.',
      };
      const started = performance.now();
      await store.append(sessionId, [fact]);
      times[position]?.push(performance.now() - started);
    }
  }
  return times;
}

/** Starts the benchmark's run in a session (its appends are steering facts into it). */
async function startRun(store: EventStore, sessionId: string): Promise<void> {
  await store.append(sessionId, [
    {
      ...envelope(sessionId, `${sessionId}_start`),
      type: 'run.started',
      input: { text: 'go' },
      runtimeVersion: '0.1.0',
      limits,
    },
  ]);
}

function envelope(sessionId: string, id: string) {
  return {
    id,
    at: '2026-03-02T10:02:11.480Z',
    sessionId,
    turnId: 'turn_bench',
    runId: 'run_bench',
  };
}

function percentile(values: readonly number[], at: number): number {
  const sorted = [...values].sort((left, right) => left - right);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * at))] ?? Number.NaN;
}

/** Appends per second when `sessions` sessions each append `perSession` facts, one at a time. */
async function concurrentThroughput(store: EventStore, sessions: number, perSession: number) {
  const started = performance.now();
  await Promise.all(
    Array.from({ length: sessions }, async (_, session) => {
      const sessionId = `concurrent_${session}`;
      for (let index = 0; index < perSession; index += 1) {
        const fact: NewFact = {
          id: `${sessionId}_${index}`,
          at: '2026-03-02T10:02:11.480Z',
          sessionId,
          turnId: 'turn_1',
          runId: 'run_1',
          type: 'steering.received',
          messageId: `message_${index}`,
          text: 'Also check the changelog, please.',
        };
        await store.append(sessionId, [fact], { expectedSeq: index });
      }
    }),
  );
  return (sessions * perSession) / ((performance.now() - started) / 1000);
}

function printTable(rows: StoreBenchRow[]): void {
  const lines = rows.map((row) => [
    row.metric,
    `${row.value.toFixed(row.unit === '/s' ? 0 : 2)} ${row.unit}`,
    row.target ?? '',
  ]);
  const widths = [0, 1, 2].map((column) =>
    Math.max(
      ...lines.map((line) => line[column]?.length ?? 0),
      ['metric', 'value', 'target'][column]?.length ?? 0,
    ),
  );
  const format = (cells: string[]) =>
    cells.map((cell, column) => cell.padEnd(widths[column] ?? 0)).join('  ');
  console.log(format(['metric', 'value', 'target']));
  for (const line of lines) console.log(format(line));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  printTable(await benchStore());
}
