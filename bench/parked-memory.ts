// Memory per parked session: 1,000 to 100,000 sessions parked in awaitingPermission in one
// runtime, on memoryStore and on lowdbStore; heap growth per session after GC, and the time of a
// cold decide() on one of them. Each measurement runs in its own child process started with
// --expose-gc.
// Run alone: npx node bench/parked-memory.ts (npx node bench/parked-memory.ts 100000: that row)
// TURNLOG_HEAP_SNAPSHOT=prefix: each child writes prefix-before.heapsnapshot (warm-up sessions
// parked) and prefix-after.heapsnapshot (all parked); bench/heap-summary.ts names what grew.
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { writeHeapSnapshot } from 'node:v8';
import type { Fact, NewFact } from '../events/facts.ts';
import type { Runtime } from '../runtime.ts';
import type { EventStore } from '../store/event-store.ts';
import { lowdbStore } from '../store/folder/lowdb-store.ts';
import { memoryStore } from '../store/memory/memory-store.ts';
import { conversationPrompt } from './conversation.ts';
import { type BenchTable, formatBytes, formatMs } from './table.ts';
import { conversationRuntime } from './turnlog-side.ts';

/** Which store the runtime uses. */
export type ParkedStore = 'memoryStore' | 'lowdbStore';

/** What holds the parked sessions. */
export type ParkedMode = 'runtime' | 'store only';

/** One child process's measurement. */
export interface ParkedMemoryRow {
  store: ParkedStore;
  /** `runtime`: sessions parked by the runtime; `store only`: their facts appended to the store, no runtime. */
  mode: ParkedMode;
  sessions: number;
  /** Heap after GC with only the warm-up sessions parked, and after all sessions parked. */
  heapBefore: number;
  heapAfter: number;
  /** (heapAfter − heapBefore) ÷ sessions. */
  bytesPerSession: number;
  /** Resident set growth ÷ sessions (includes memory V8 has not returned). */
  rssPerSession: number;
  /** Wall time to send and park all sessions (32 at a time). */
  parkMs: number;
  /** Heap in use after GC with every session parked (warm-up ones included). */
  heapUsed: number;
  /**
   * Runtime rows: `decide()` on sessions parked first (out of the store's cache, no live actor),
   * each until its decision is durable: the median and the slowest of 10.
   */
  coldDecideMs: { median: number; max: number } | undefined;
  /** `openRuns()` over every session afterwards (lowdbStore: from the files, after a reopen). */
  openRunsMs: number;
}

/** One measurement: a store, who parks the sessions, how many. */
export type ParkedMemorySpec = Pick<ParkedMemoryRow, 'store' | 'mode' | 'sessions'>;

/** The default rows: both stores at 1,000 and 10,000, lowdbStore at 100,000 too. */
export const defaultParkedSpecs: ParkedMemorySpec[] = [
  { store: 'memoryStore', mode: 'runtime', sessions: 1_000 },
  { store: 'memoryStore', mode: 'runtime', sessions: 10_000 },
  { store: 'memoryStore', mode: 'store only', sessions: 10_000 },
  { store: 'lowdbStore', mode: 'runtime', sessions: 1_000 },
  { store: 'lowdbStore', mode: 'runtime', sessions: 10_000 },
  { store: 'lowdbStore', mode: 'runtime', sessions: 100_000 },
  { store: 'lowdbStore', mode: 'store only', sessions: 10_000 },
];

const warmupSessions = 50;
const concurrency = 32;

/**
 * Measures each spec in a child process of its own, so one measurement's garbage never lands in
 * another's heap.
 */
export async function benchParkedMemory(
  specs: readonly ParkedMemorySpec[] = defaultParkedSpecs,
): Promise<ParkedMemoryRow[]> {
  const rows: ParkedMemoryRow[] = [];
  for (const { store, mode, sessions } of specs) {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--expose-gc', fileURLToPath(import.meta.url), '--child', store, mode, String(sessions)],
      { maxBuffer: 1024 * 1024 },
    );
    rows.push(JSON.parse(stdout.trim().split('\n').at(-1) ?? '') as ParkedMemoryRow);
  }
  return rows;
}

/**
 * In the child: park `sessions` sessions in one runtime (or, `store only`, append a parked
 * session's facts for each to the store, with no runtime) and measure the heap around them.
 */
async function measure(
  storeName: ParkedStore,
  mode: ParkedMode,
  sessions: number,
): Promise<ParkedMemoryRow> {
  const gc = globalThis.gc;
  if (gc === undefined) throw new Error('parked-memory: run the child with --expose-gc');
  const dir = await mkdtemp(path.join(tmpdir(), 'turnlog-bench-parked-'));
  const store: EventStore = storeName === 'memoryStore' ? memoryStore() : lowdbStore({ dir });
  const runtime = conversationRuntime({ store, steps: 20, permission: 'ask' });
  try {
    await parkAll(runtime, 'warmup', warmupSessions);
    const heapBefore = await heapAfterGc(gc);
    writeSnapshot('before');
    const rssBefore = process.memoryUsage().rss;
    const started = performance.now();
    if (mode === 'runtime') await parkAll(runtime, 'parked', sessions);
    else await appendAll(store, await store.read('warmup_0'), 'parked', sessions);
    const parkMs = performance.now() - started;
    const heapAfter = await heapAfterGc(gc);
    const rssAfter = process.memoryUsage().rss;
    writeSnapshot('after');
    const coldDecideMs = mode === 'runtime' ? await coldDecides(runtime, store) : undefined;

    // The last session parked was not decided: exactly one pending decision.
    const pending = (await store.read(`parked_${sessions - 1}`)).filter(
      (fact) => fact.type === 'tool.permission.requested',
    );
    let openRunsStore = store;
    if (storeName === 'lowdbStore') {
      // After a restart: from the files alone (one record and one tail per session).
      await runtime.close();
      openRunsStore = lowdbStore({ dir });
    }
    const listed = performance.now();
    const open = await openRunsStore.openRuns();
    const openRunsMs = performance.now() - listed;
    if (openRunsStore !== store) await openRunsStore.close();
    if (open.length !== warmupSessions + sessions || pending.length !== 1) {
      throw new Error(
        `parked-memory: ${open.length} open runs and ${pending.length} pending decisions, expected ${warmupSessions + sessions} and 1`,
      );
    }
    return {
      store: storeName,
      mode,
      sessions,
      heapBefore,
      heapAfter,
      bytesPerSession: (heapAfter - heapBefore) / sessions,
      rssPerSession: (rssAfter - rssBefore) / sessions,
      parkMs,
      heapUsed: heapAfter,
      coldDecideMs,
      openRunsMs,
    };
  } finally {
    await runtime.close();
    await rm(dir, { recursive: true, force: true });
  }
}

/** With TURNLOG_HEAP_SNAPSHOT=prefix, a heap snapshot at this point of the measurement. */
function writeSnapshot(point: 'before' | 'after'): void {
  const prefix = process.env.TURNLOG_HEAP_SNAPSHOT;
  if (prefix !== undefined && prefix !== '') writeHeapSnapshot(`${prefix}-${point}.heapsnapshot`);
}

/**
 * `decide()` (allow) on the first 10 sessions parked: long out of the store's cache and holding no
 * actor, so each one reads its session from disk (warm page cache), folds it and commits. Each is
 * timed alone: the next starts once the run it resumed has parked again at its next call.
 */
async function coldDecides(
  runtime: Runtime,
  store: EventStore,
): Promise<{ median: number; max: number }> {
  const times: number[] = [];
  for (let index = 0; index < 10; index += 1) {
    const sessionId = `parked_${index}`;
    const parkedAgain = new Promise<void>((resolve) => {
      const stop = store.subscribe(sessionId, (fact) => {
        if (fact.type !== 'tool.permission.requested') return;
        stop();
        resolve();
      });
    });
    const started = performance.now();
    await runtime.decide({ sessionId, callId: 'call_1', decision: 'allow' });
    times.push(performance.now() - started);
    await parkedAgain;
  }
  times.sort((left, right) => left - right);
  return { median: ((times[4] ?? 0) + (times[5] ?? 0)) / 2, max: times.at(-1) ?? 0 };
}

/** Sends one turn per session, `concurrency` at a time, each read until it asks for permission. */
async function parkAll(runtime: Runtime, prefix: string, sessions: number): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < sessions) {
      const sessionId = `${prefix}_${next}`;
      next += 1;
      const turn = await runtime.send({ sessionId, text: conversationPrompt });
      for await (const event of turn.events) if (event.type === 'tool.permission.requested') break;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

/** Appends a copy of one parked session's facts under each new session id, `concurrency` at a time. */
/** Appends `sessions` copies of a session's facts, each under `${prefix}_${n}`, a few at a time. */
export async function appendAll(
  store: EventStore,
  template: readonly Fact[],
  prefix: string,
  sessions: number,
): Promise<void> {
  const json = JSON.stringify(template.map(({ seq: _seq, ...fact }) => fact));
  const from = `"${template[0]?.sessionId}"`;
  let next = 0;
  const worker = async () => {
    while (next < sessions) {
      const sessionId = `${prefix}_${next}`;
      next += 1;
      const facts = JSON.parse(json.replaceAll(from, `"${sessionId}"`)) as NewFact[];
      await store.append(sessionId, facts, { expectedSeq: 0 });
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

/** Heap used after the runtime's pending work (releasing parked actors) and a full GC. */
async function heapAfterGc(gc: () => void): Promise<number> {
  for (let round = 0; round < 5; round += 1) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    gc();
  }
  return process.memoryUsage().heapUsed;
}

/** The rows as a table. */
export function parkedMemoryTable(rows: ParkedMemoryRow[]): BenchTable {
  return {
    title: 'Memory per parked session (one runtime, sessions parked in awaitingPermission)',
    columns: [
      'store',
      'parked by',
      'sessions',
      'heap growth per session',
      'heap used, all parked',
      'RSS growth per session',
      'time to park all',
      'cold decide() (median / max of 10)',
      'openRuns() of all',
    ],
    rows: rows.map((row) => [
      row.store,
      row.mode === 'runtime' ? 'the runtime' : 'no runtime: facts appended to the store',
      row.sessions.toLocaleString('en-US'),
      formatBytes(row.bytesPerSession),
      formatBytes(row.heapUsed),
      formatBytes(row.rssPerSession),
      formatMs(row.parkMs),
      row.coldDecideMs === undefined
        ? ''
        : `${formatMs(row.coldDecideMs.median)} / ${formatMs(row.coldDecideMs.max)}`,
      formatMs(row.openRunsMs),
    ]),
    notes: [
      `each row in its own child process (node --expose-gc); ${warmupSessions} sessions are parked first as a warm-up and are in the baseline; heapUsed after five GCs, before and after parking; the turn handles are dropped after reading up to tool.permission.requested`,
      'a session parks at its first tool call (the `add` tool asks): run.started, step.started, step.completed, tool.permission.requested; a parked run holds no actor (the runtime releases it and rehydrates from the log on decide())',
      "memoryStore keeps every fact in the heap by design, so its rows include the log itself; the store-only rows append each parked session's four facts (ids renamed per session) with no runtime, to show how much of the runtime rows is the store's",
      'lowdbStore keeps at most maxCachedSessions (default 1,000) idle sessions in memory; cold decide(): allow on one of the first sessions parked, out of that cache and holding no actor, until the decision is durable (the page cache is warm); openRuns() of all: after closing the runtime, a new lowdbStore on the folder (one record and one tail read per session)',
    ],
  };
}

if (import.meta.main) {
  if (process.argv[2] === '--child') {
    const row = await measure(
      process.argv[3] as ParkedStore,
      process.argv[4] as ParkedMode,
      Number(process.argv[5]),
    );
    console.log(JSON.stringify(row));
  } else {
    const { formatTable } = await import('./table.ts');
    const only = Number(process.argv[2]);
    const specs = Number.isInteger(only)
      ? defaultParkedSpecs.filter((spec) => spec.sessions === only && spec.mode === 'runtime')
      : defaultParkedSpecs;
    console.log(formatTable(parkedMemoryTable(await benchParkedMemory(specs))));
  }
}
