// What tracing and metrics cost per step: the overhead benchmark's 20-step tool conversation on
// memoryStore (where the orchestration is all there is to measure), with telemetry off, the
// default (the API installed, no SDK registered), and traced and measured by an SDK whose
// exporters drop everything (with and without content); and on lowdbStore (the default store, an
// fsync per append), off and traced. More rounds than `overhead`, and the cost read per round
// (each round runs every side once), so the load's drift cancels out.
// Run alone: npx node bench/telemetry-overhead.ts

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-base';
import type { Runtime } from '../runtime.ts';
import { lowdbStore } from '../store/folder/lowdb-store.ts';
import { memoryStore } from '../store/memory/memory-store.ts';
import { interleave, median, sampleLists } from './stats.ts';
import { type BenchTable, formatMs, formatTable } from './table.ts';
import { conversationRuntime, runTurnlog } from './turnlog-side.ts';

/** Options of {@link benchTelemetryOverhead}. */
export interface TelemetryBenchOptions {
  steps?: number;
  rounds?: number;
  warmup?: number;
}

const sideNames = {
  off: 'memoryStore, telemetry: false (the API is not loaded)',
  noSdk: 'memoryStore, default, no SDK registered (the API’s no-op spans)',
  traced: 'memoryStore, traced and measured, no-op exporters',
  content: 'memoryStore, traced and measured with recordContent, no-op exporters',
  lowdbOff: 'lowdbStore, telemetry: false',
  lowdbTraced: 'lowdbStore, traced and measured, no-op exporters',
} as const;

type Side = keyof typeof sideNames;

/** The side each one's cost is read against: the same store with telemetry off. */
const baseOf = (side: Side): Side => (side.startsWith('lowdb') ? 'lowdbOff' : 'off');

/** One side: its medians per step, and its cost over `off` read round by round. */
export interface TelemetryRow {
  side: string;
  stepMs: number;
  cpuStepMs: number;
  /** Median over rounds of (this side − off) per step, wall and CPU, in ms. */
  costMs: number;
  cpuCostMs: number;
  /** `cpuCostMs` ÷ off's median CPU per step. */
  cpuCost: number;
  costRatio: number;
}

/**
 * An OpenTelemetry SDK as an app sets one up, whose exporters drop what they get: spans through a
 * BatchSpanProcessor (the production choice), metrics aggregated by a reader nobody reads.
 */
export function noopExportingTelemetry() {
  const exporter: SpanExporter = {
    export: (_spans, done) => done({ code: 0 }),
    shutdown: async () => {},
  };
  const tracerProvider = new BasicTracerProvider({
    spanProcessors: [new BatchSpanProcessor(exporter)],
  });
  class UnreadReader extends MetricReader {
    protected async onForceFlush(): Promise<void> {}
    protected async onShutdown(): Promise<void> {}
  }
  const meterProvider = new MeterProvider({ readers: [new UnreadReader()] });
  return {
    tracer: tracerProvider.getTracer('turnlog'),
    meter: meterProvider.getMeter('turnlog'),
    async shutdown() {
      await tracerProvider.shutdown();
      await meterProvider.shutdown();
    },
  };
}

/** Runs the sides in interleaved rounds; every run is checked for the full step count. */
export async function benchTelemetryOverhead(
  options: TelemetryBenchOptions = {},
): Promise<TelemetryRow[]> {
  const steps = options.steps ?? 20;
  const sdk = noopExportingTelemetry();
  const { tracer, meter } = sdk;
  const dir = await mkdtemp(path.join(tmpdir(), 'turnlog-bench-telemetry-'));
  const runtimes: Record<Side, Runtime> = {
    off: conversationRuntime({ store: memoryStore(), steps, telemetry: false }),
    noSdk: conversationRuntime({ store: memoryStore(), steps }),
    traced: conversationRuntime({ store: memoryStore(), steps, telemetry: { tracer, meter } }),
    content: conversationRuntime({
      store: memoryStore(),
      steps,
      telemetry: { tracer, meter, recordContent: true },
    }),
    lowdbOff: conversationRuntime({
      store: lowdbStore({ dir: path.join(dir, 'off') }),
      steps,
      telemetry: false,
    }),
    lowdbTraced: conversationRuntime({
      store: lowdbStore({ dir: path.join(dir, 'traced') }),
      steps,
      telemetry: { tracer, meter },
    }),
  };
  let run = 0;
  const side = (name: Side) => () => {
    run += 1;
    return runTurnlog({ runtime: runtimes[name], sessionId: `telemetry_${run}`, steps });
  };
  const names = Object.keys(sideNames) as Side[];
  try {
    const cpu = sampleLists(names);
    const wall = await interleave({
      rounds: options.rounds ?? 60,
      warmup: options.warmup ?? 5,
      cpu,
      sides: {
        off: side('off'),
        noSdk: side('noSdk'),
        traced: side('traced'),
        content: side('content'),
        lowdbOff: side('lowdbOff'),
        lowdbTraced: side('lowdbTraced'),
      },
    });
    const perRound = (samples: number[], base: number[]) =>
      median(samples.map((value, index) => (value - (base[index] as number)) / steps));
    return names.map((name) => {
      const base = baseOf(name);
      const cpuCostMs = perRound(cpu[name], cpu[base]);
      const costMs = perRound(wall[name], wall[base]);
      return {
        side: sideNames[name],
        stepMs: median(wall[name]) / steps,
        cpuStepMs: median(cpu[name]) / steps,
        costMs,
        cpuCostMs,
        costRatio: costMs / (median(wall[base]) / steps),
        cpuCost: cpuCostMs / (median(cpu[base]) / steps),
      };
    });
  } finally {
    for (const runtime of Object.values(runtimes)) await runtime.close();
    await sdk.shutdown();
    await rm(dir, { recursive: true, force: true });
  }
}

const percent = (fraction: number) => `${fraction >= 0 ? '+' : ''}${(fraction * 100).toFixed(1)} %`;

/** The rows as a table, with the target (≤ 5 % per step with a no-op exporter). */
export function telemetryTable(
  rows: TelemetryRow[],
  options: TelemetryBenchOptions = {},
): BenchTable {
  return {
    title: `Telemetry overhead: ${options.steps ?? 20}-step tool conversation, zero-latency model`,
    columns: [
      'side',
      'per step',
      'CPU per step',
      'cost per step (wall)',
      'cost per step (CPU)',
      'target',
    ],
    rows: rows.map((row) => [
      row.side,
      formatMs(row.stepMs),
      formatMs(row.cpuStepMs),
      `${formatMs(row.costMs)} (${percent(row.costRatio)})`,
      `${formatMs(row.cpuCostMs)} (${percent(row.cpuCost)})`,
      row.side === sideNames.traced || row.side === sideNames.lowdbTraced
        ? `≤ 5 % per step: ${row.cpuCost <= 0.05 && row.costRatio <= 0.05 ? 'met' : 'MISSED'}`
        : '',
    ]),
    notes: [
      `${options.rounds ?? 60} interleaved rounds after ${options.warmup ?? 5} warm-up rounds, each running every side once in a rotating order; per step: medians; cost: the median over rounds of (side − telemetry: false) in the same round, per step, and its share of that median (memoryStore sides against memoryStore's telemetry: false, lowdbStore's against lowdbStore's)`,
      'no-op exporters: a BatchSpanProcessor whose exporter drops the spans, a metric reader never collected (instruments still aggregate); an app exporting to a collector adds the exporter’s own work, off the run’s path',
    ],
  };
}

if (import.meta.main) {
  console.log(formatTable(telemetryTable(await benchTelemetryOverhead())));
}
