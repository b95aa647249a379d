// One worker process of bench/million-parked.ts, on a schema filled with parked runs
// (bench/million-fill.ts): started with --expose-gc, it prints one JSON line of what it measured.
// Usage: node --expose-gc bench/million-parked-child.ts <connectionString> <schema> <session to decide>
import { createRuntime } from '../runtime.ts';
import { postgresStore } from '../store/postgres/postgres-store.ts';
import { parkedModel, parkedTools } from './million-fill.ts';

/** What one worker process measured (times in ms, memory in bytes). */
export interface WorkerSample {
  /** Process start → the worker answered its first request (imports, store open, one read). */
  startMs: number;
  /** createRuntime → that first request answered (the store's open and one read). */
  openMs: number;
  /** CPU time (user + system) of the process until then: less at the mercy of the load. */
  startCpuMs: number;
  /** runtime.recover() after startup, as README's "Operating turnlog" says to call it. */
  recoverMs: number;
  recovered: number;
  /** After startup and recover() (GC'd heap, RSS), and after a few scan and renewal periods. */
  heapStarted: number;
  rssStarted: number;
  heapSettled: number;
  rssSettled: number;
  /** decide() on a parked run until it returns (the decision durable), and until the run ended. */
  decideMs: number;
  endedMs: number;
  /** After the decided run ended. */
  heapEnd: number;
  rssEnd: number;
}

const leaseMs = 2_000;

async function heap(gc: () => void): Promise<number> {
  gc();
  await new Promise((resolve) => setImmediate(resolve));
  gc();
  return process.memoryUsage().heapUsed;
}

async function measure(
  connectionString: string,
  schema: string,
  sessionId: string,
): Promise<WorkerSample> {
  const gc = globalThis.gc;
  if (gc === undefined) throw new Error('million-parked: run the child with --expose-gc');
  const created = performance.now();
  const store = postgresStore({ connectionString, schema });
  const runtime = createRuntime({
    model: parkedModel(false),
    tools: parkedTools(),
    store,
    worker: { id: `bench-${process.pid}`, leaseMs },
  });
  // The first request a worker answers: the store opens (its migrations checked) and reads.
  const pending = await runtime.pending(sessionId);
  const startMs = performance.now();
  const openMs = startMs - created;
  const cpu = process.cpuUsage();
  const startCpuMs = (cpu.user + cpu.system) / 1000;
  if (pending.length !== 1)
    throw new Error(`million-parked: ${sessionId} owes ${pending.length} decisions`);
  const recoverStarted = performance.now();
  const recovered = (await runtime.recover()).length;
  const recoverMs = performance.now() - recoverStarted;
  const heapStarted = await heap(gc);
  const rssStarted = process.memoryUsage().rss;
  // Several takeover scans (every leaseMs / 4) and renewal ticks run meanwhile.
  await new Promise((resolve) => setTimeout(resolve, 3 * leaseMs));
  const heapSettled = await heap(gc);
  const rssSettled = process.memoryUsage().rss;
  const turn = await runtime.follow(sessionId);
  const started = performance.now();
  await runtime.decide({ sessionId, callId: 'call_1', decision: 'allow' });
  const decideMs = performance.now() - started;
  const result = await turn?.done;
  const endedMs = performance.now() - started;
  if (result?.status !== 'completed' || result.text !== 'Done.') {
    throw new Error(`million-parked: the decided run ended ${JSON.stringify(result)}`);
  }
  const heapEnd = await heap(gc);
  const rssEnd = process.memoryUsage().rss;
  await runtime.close();
  return {
    startMs,
    openMs,
    startCpuMs,
    recoverMs,
    recovered,
    heapStarted,
    rssStarted,
    heapSettled,
    rssSettled,
    decideMs,
    endedMs,
    heapEnd,
    rssEnd,
  };
}

const [connectionString, schema, sessionId] = process.argv.slice(2);
if (connectionString === undefined || schema === undefined || sessionId === undefined) {
  throw new Error('usage: node --expose-gc bench/million-parked-child.ts <url> <schema> <session>');
}
console.log(JSON.stringify(await measure(connectionString, schema, sessionId)));
