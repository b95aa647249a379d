// Orchestration overhead per step: the same 20-step tool-calling conversation on a zero-latency
// scripted model through plain streamText, turnlog (memoryStore, lowdbStore) and LangGraph.js
// (MemorySaver, PostgresSaver), in interleaved rounds; medians per step and ratios to streamText.
// Run alone: npx node bench/overhead.ts
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { MemorySaver } from '@langchain/langgraph';
import { lowdbStore } from '../store/folder/lowdb-store.ts';
import { memoryStore } from '../store/memory/memory-store.ts';
import { conversationModel } from './conversation.ts';
import { agentGraph, runAgentGraph } from './langgraph-agent.ts';
import { openPostgresCheckpointer } from './postgres-checkpointer.ts';
import { interleave, median, sampleLists } from './stats.ts';
import { type BenchTable, formatMs, formatTable } from './table.ts';
import { noopExportingTelemetry } from './telemetry-overhead.ts';
import { conversationRuntime, runStreamText, runTurnlog } from './turnlog-side.ts';

/** Options of {@link benchOverhead}. */
export interface OverheadBenchOptions {
  /** Model steps per conversation (default 20: 19 tool steps and a final text step). */
  steps?: number;
  /** Measured rounds; each round runs every side once (default 15). */
  rounds?: number;
  /** Unmeasured rounds first (default 3). */
  warmup?: number;
}

/** One side's median. */
export interface OverheadRow {
  side: string;
  /** Median of whole conversations, in ms. */
  conversationMs: number;
  stepMs: number;
  /** `stepMs` ÷ plain streamText's. */
  ratio: number;
  /** Median CPU time of this process per step (a database's own work is not in it). */
  cpuStepMs: number;
  /** `cpuStepMs` ÷ plain streamText's. */
  cpuRatio: number;
}

const sideNames = {
  streamText: '(a) AI SDK streamText, stopWhen: stepCountIs(20)',
  turnlogMemory: '(b) turnlog, memoryStore',
  turnlogMemoryUntraced: '(b) turnlog, memoryStore, telemetry: false',
  turnlogMemoryTraced: '(b) turnlog, memoryStore, traced and measured (no-op exporters)',
  turnlogLowdb: '(c) turnlog, lowdbStore (fsync per append)',
  langGraphMemory: '(d) LangGraph.js, MemorySaver',
  langGraphPostgres: '(d) LangGraph.js, PostgresSaver, durability async (default)',
  langGraphPostgresSync: '(d) LangGraph.js, PostgresSaver, durability sync',
} as const;

/**
 * Runs the conversation through every side in interleaved rounds and returns per-step medians.
 * Every run is checked (step count, completion), so a side cannot win by doing less.
 */
export async function benchOverhead(options: OverheadBenchOptions = {}): Promise<OverheadRow[]> {
  const steps = options.steps ?? 20;
  const dir = await mkdtemp(path.join(tmpdir(), 'turnlog-bench-overhead-'));
  const postgres = await openPostgresCheckpointer('turnlog_bench_overhead');
  const memoryRuntime = conversationRuntime({ store: memoryStore(), steps });
  const untracedRuntime = conversationRuntime({ store: memoryStore(), steps, telemetry: false });
  const telemetry = noopExportingTelemetry();
  const tracedRuntime = conversationRuntime({
    store: memoryStore(),
    steps,
    telemetry: { tracer: telemetry.tracer, meter: telemetry.meter },
  });
  const lowdbRuntime = conversationRuntime({ store: lowdbStore({ dir }), steps });
  const memoryGraph = agentGraph({
    model: conversationModel(steps),
    checkpointer: new MemorySaver(),
  });
  const postgresGraph = agentGraph({
    model: conversationModel(steps),
    checkpointer: postgres.saver,
  });
  let run = 0;
  const next = () => {
    run += 1;
    return `bench_${run}`;
  };
  try {
    const cpu = sampleLists(Object.keys(sideNames) as (keyof typeof sideNames)[]);
    const samples = await interleave({
      rounds: options.rounds ?? 15,
      warmup: options.warmup ?? 3,
      cpu,
      sides: {
        streamText: () => runStreamText(steps),
        turnlogMemory: () => runTurnlog({ runtime: memoryRuntime, sessionId: next(), steps }),
        turnlogMemoryUntraced: () =>
          runTurnlog({ runtime: untracedRuntime, sessionId: next(), steps }),
        turnlogMemoryTraced: () => runTurnlog({ runtime: tracedRuntime, sessionId: next(), steps }),
        turnlogLowdb: () => runTurnlog({ runtime: lowdbRuntime, sessionId: next(), steps }),
        langGraphMemory: () =>
          runAgentGraph({ graph: memoryGraph, threadId: next(), steps, durability: 'async' }),
        langGraphPostgres: () =>
          runAgentGraph({ graph: postgresGraph, threadId: next(), steps, durability: 'async' }),
        langGraphPostgresSync: () =>
          runAgentGraph({ graph: postgresGraph, threadId: next(), steps, durability: 'sync' }),
      },
    });
    const baseline = median(samples.streamText) / steps;
    const cpuBaseline = median(cpu.streamText) / steps;
    return (Object.keys(sideNames) as (keyof typeof sideNames)[]).map((key) => {
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
  } finally {
    await memoryRuntime.close();
    await untracedRuntime.close();
    await tracedRuntime.close();
    await telemetry.shutdown();
    await lowdbRuntime.close();
    await postgres.close();
    await rm(dir, { recursive: true, force: true });
  }
}

/** The overhead rows as a table with the targets. */
export function overheadTable(rows: OverheadRow[], options: OverheadBenchOptions = {}): BenchTable {
  const find = (prefix: string) => rows.find((row) => row.side.startsWith(prefix));
  const memory = find('(b)');
  const untraced = rows.find((row) => row.side.endsWith('telemetry: false'));
  const traced = rows.find((row) => row.side.includes('traced'));
  const lowdb = find('(c)');
  const postgresSync = rows.find((row) => row.side.includes('durability sync'));
  const target = (row: OverheadRow) => {
    if (row === memory) {
      const verdict = row.ratio <= 1.5 ? 'met, stretch too' : row.ratio <= 2 ? 'met' : 'MISSED';
      return `≤ 2.0× (a), stretch 1.5×: ${verdict}`;
    }
    if (row === traced && untraced !== undefined) {
      const cost = row.stepMs / untraced.stepMs - 1;
      const cpuCost = row.cpuStepMs / untraced.cpuStepMs - 1;
      return `tracing ≤ 5 % per step over telemetry: false: ${cost <= 0.05 ? 'met' : 'MISSED'} (${formatPercent(cost)} wall, ${formatPercent(cpuCost)} CPU; ${formatMs(row.stepMs - untraced.stepMs)} per step)`;
    }
    if (row === lowdb && postgresSync !== undefined) {
      const relative = row.stepMs / postgresSync.stepMs;
      return `faster than PostgresSaver sync: ${relative < 1 ? 'met' : 'MISSED'} (${relative.toFixed(2)}×)`;
    }
    return '';
  };
  return {
    title: `Orchestration overhead: ${options.steps ?? 20}-step tool conversation, zero-latency model`,
    columns: [
      'side',
      'per step',
      'per conversation',
      'ratio to (a)',
      'CPU per step',
      'CPU ratio to (a)',
      'target',
    ],
    rows: rows.map((row) => [
      row.side,
      formatMs(row.stepMs),
      formatMs(row.conversationMs),
      `${row.ratio.toFixed(2)}×`,
      formatMs(row.cpuStepMs),
      `${row.cpuRatio.toFixed(2)}×`,
      target(row),
    ]),
    notes: [
      `medians of ${options.rounds ?? 15} interleaved rounds after ${options.warmup ?? 3} warm-up rounds; each round runs every side once, in a rotating order`,
      "CPU: this process's user + system time per step, every thread; PostgreSQL's own work runs in its server and is not in it. On a loaded machine wall time also counts waiting for a core, which costs a side more the more often it returns to the event loop: compare the CPU ratios there",
      "turnlog's three memoryStore sides differ only in telemetry: (b) the default (@opentelemetry/api installed, no SDK registered: spans are the API's no-op ones), `telemetry: false` (the API is not loaded), and an SDK's tracer (BatchSpanProcessor) and meter (a reader) whose exporters drop everything",
      'every side calls the same stateless AI SDK scripted model (streamed text and tool-argument deltas) and executes the same `add` tool; every run is checked for the full step count',
      'LangGraph: StateGraph(MessagesAnnotation), an agent node (a BaseChatModel wrapping the scripted model, tools bound), the prebuilt ToolNode and toolsCondition; graph.invoke on a new thread per run',
      'PostgresSaver instead of SqliteSaver: better-sqlite3 builds against Node 20 headers here and does not load under Node 24; PostgreSQL on 127.0.0.1:5432 (TCP), same disk as the lowdb temp dir',
    ],
  };
}

function formatPercent(fraction: number): string {
  return `${fraction >= 0 ? '+' : ''}${(fraction * 100).toFixed(1)} %`;
}

if (import.meta.main) {
  console.log(formatTable(overheadTable(await benchOverhead())));
}
