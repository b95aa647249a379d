// Issue 26, defect 5: a 50 MB tool output under a short lease on postgresStore. One worker, one
// run (a tool call returning N MB of text, then an answer), its leases renewed from its renewal
// thread ('thread', the default now) or from a timer on the event loop ('loop'), and (A/B, with
// a base checkout given) the base's worker as it was; each case in a fresh schema, the sides
// alternating in one run. Per case: how the run ended (or where it stood at the deadline), the
// epochs it went through (a takeover is one more), run.recovered facts, the model's requests (a
// re-sent request is one more), the longest the event loop was blocked, the longest append, and
// the wall time.
// Run: npx node bench/large-output-lease.ts [<base checkout>]   (TURNLOG_LEASE_BENCH_MB: the
// output's size, default 50; TURNLOG_LEASE_BENCH_ROUNDS: default 2; TURNLOG_BENCH_PG: the server)
import { existsSync } from 'node:fs';
import { loadavg } from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { z } from 'zod';
import type { scriptedModel as ScriptedModelFactory } from '../adapters/scripted-model.ts';
import type { Fact } from '../events/facts.ts';
import type { createRuntime as CreateRuntime } from '../runtime.ts';
import type {
  PostgresStore,
  postgresStore as PostgresStoreFactory,
} from '../store/postgres/postgres-store.ts';
import type { defineTool as DefineTool } from '../tools/define-tool.ts';
import { postgresConnection } from './postgres-checkpointer.ts';
import { type BenchTable, formatMs } from './table.ts';

/** One case: the output's size, the lease, the checkout and where leases were renewed from. */
export interface LeaseCase {
  mb: number;
  leaseMs: number;
  side: Side;
}

/** A checkout's runtime and store, and the renewal it is asked for (none: the base's own). */
interface Side {
  label: string;
  renewal: 'thread' | 'loop' | undefined;
  createRuntime: typeof CreateRuntime;
  postgresStore: typeof PostgresStoreFactory;
  defineTool: typeof DefineTool;
  scriptedModel: typeof ScriptedModelFactory;
}

async function loadSide(label: string, root: string, renewal: Side['renewal']): Promise<Side> {
  const load = (file: string) => import(path.join(root, file));
  return {
    label,
    renewal,
    createRuntime: (await load('runtime.ts')).createRuntime,
    postgresStore: (await load('store/postgres/postgres-store.ts')).postgresStore,
    defineTool: (await load('tools/define-tool.ts')).defineTool,
    scriptedModel: (await load('adapters/scripted-model.ts')).scriptedModel,
  };
}

/** What one case measured. */
export interface LeaseRow extends LeaseCase {
  /** `completed`, another end, or `not ended: <last fact>` at the deadline. */
  outcome: string;
  /** The (worker, epoch) pairs of the run's facts, in order: more than one is a takeover. */
  epochs: string[];
  recovered: number;
  requests: number;
  /** The longest stretch the event loop did not turn (monitorEventLoopDelay's max). */
  maxBlockMs: number;
  /** The longest `append` as the runtime called it (the 50 MB `tool.settled`). */
  maxAppendMs: number;
  wallMs: number;
  load: number;
}

const deadlineMs = Number(process.env.TURNLOG_LEASE_BENCH_DEADLINE_MS ?? 120_000);

function connectionString(): string {
  const config = postgresConnection();
  if (config.connectionString !== undefined) return config.connectionString;
  return `postgres://${config.user}@${config.host}:${config.port}/${config.database}`;
}

/** About `mb` MiB of text, like a fetched page: words, punctuation, line breaks. */
function pageText(mb: number): string {
  const words = ['lease', 'renewal', 'thread', 'worker', 'append', 'fact', 'the', 'of', 'a'];
  const line: string[] = [];
  let seed = 7;
  for (let index = 0; index < 12_000; index += 1) {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
    line.push(words[seed % words.length] as string);
    if (index % 14 === 13) line.push('"quoted",\n');
  }
  const chunk = line.join(' ');
  return chunk.repeat(Math.ceil((mb * 1024 * 1024) / chunk.length)).slice(0, mb * 1024 * 1024);
}

/** The store, with the longest `append` timed. */
function timedAppends(store: PostgresStore): { store: PostgresStore; maxMs: () => number } {
  let maxMs = 0;
  const timed = new Proxy(store, {
    get(target, key) {
      const value = Reflect.get(target, key, target);
      if (typeof value !== 'function') return value;
      if (key !== 'append') return value.bind(target);
      return async (...args: Parameters<PostgresStore['append']>) => {
        const started = performance.now();
        try {
          return await target.append(...args);
        } finally {
          maxMs = Math.max(maxMs, performance.now() - started);
        }
      };
    },
  });
  return { store: timed, maxMs: () => maxMs };
}

async function runCase(item: LeaseCase, text: string): Promise<LeaseRow> {
  const { side } = item;
  const { createRuntime, postgresStore, defineTool, scriptedModel } = side;
  const schema = `lease_bench_${Math.random().toString(36).slice(2, 10)}`;
  const url = connectionString();
  const opened = postgresStore({ connectionString: url, schema });
  const { store, maxMs } = timedAppends(opened);
  const fetchPage = defineTool({
    description: 'Fetches a page.',
    inputSchema: z.object({ url: z.string() }),
    execute: async () => text,
  });
  const runtime = createRuntime({
    store,
    // A request carrying the tool's result is answered; any other asks for the page.
    model: scriptedModel((request) =>
      request.prompt.some((message) => message.role === 'tool')
        ? { text: 'The page is long.' }
        : { toolCalls: [{ name: 'fetchPage', input: { url: 'https://example.com/big' } }] },
    ),
    tools: { fetchPage },
    worker: {
      id: 'bench-worker',
      leaseMs: item.leaseMs,
      ...(side.renewal === undefined ? {} : { renewal: side.renewal }),
    },
    limits: { toolOutputChars: item.mb * 1024 * 1024 + 1_000 },
  });
  while (side.renewal === 'thread' && runtime.worker?.renewal !== 'thread') {
    await new Promise((done) => setTimeout(done, 10));
  }
  const delay = monitorEventLoopDelay({ resolution: 20 });
  delay.enable();
  const started = performance.now();
  const load = loadavg()[0] ?? 0;
  const turn = await runtime.send({ sessionId: 's1', text: 'fetch the big page' });
  const outcome = await Promise.race([
    turn.done.then((done) => done.status),
    new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), deadlineMs).unref()),
  ]);
  const wallMs = performance.now() - started;
  delay.disable();
  await runtime.close();
  const reader = postgresStore({ connectionString: url, schema });
  const facts: Fact[] = await reader.read('s1');
  await reader.close();
  await opened.close();
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await admin.end();
  const epochs = [...new Set(facts.map((fact) => `${fact.workerId}/${fact.leaseEpoch}`))];
  return {
    ...item,
    outcome: outcome ?? `not ended: ${facts.at(-1)?.type ?? 'nothing'}`,
    epochs,
    recovered: facts.filter((fact) => fact.type === 'run.recovered').length,
    requests: facts.filter((fact) => fact.type === 'step.started').length,
    maxBlockMs: delay.max / 1e6,
    maxAppendMs: maxMs(),
    wallMs,
    load,
  };
}

/**
 * Every case: per round, per lease, each side in turn (the base checkout's worker when given,
 * then this checkout's with 'loop' and with 'thread').
 */
export async function benchLargeOutputLease(
  options: { base?: string; mb?: number; rounds?: number; leases?: number[] } = {},
): Promise<LeaseRow[]> {
  const here = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
  const sides: Side[] = [];
  if (options.base !== undefined) {
    if (!existsSync(path.join(options.base, 'runtime.ts'))) {
      throw new Error(`bench large-output-lease: ${options.base} is not a turnlog checkout`);
    }
    sides.push(await loadSide('base', options.base, undefined));
  }
  sides.push(await loadSide('loop', here, 'loop'), await loadSide('thread', here, 'thread'));
  const mb = options.mb ?? 50;
  const text = pageText(mb);
  const rows: LeaseRow[] = [];
  for (let round = 0; round < (options.rounds ?? 2); round += 1) {
    for (const leaseMs of options.leases ?? [1_000, 3_000]) {
      for (const side of sides) rows.push(await runCase({ mb, leaseMs, side }, text));
    }
  }
  return rows;
}

export function largeOutputLeaseTable(rows: LeaseRow[]): BenchTable {
  return {
    title: 'A large tool output under a short lease (postgresStore, one worker)',
    columns: [
      'output',
      'leaseMs',
      'worker',
      'run',
      'epochs',
      'run.recovered',
      'requests',
      'longest loop block',
      'longest append',
      'wall',
      'load (1 min)',
    ],
    rows: rows.map((row) => [
      `${row.mb} MB`,
      row.leaseMs.toLocaleString('en-US'),
      row.side.label,
      row.outcome,
      row.epochs.join(' → '),
      String(row.recovered),
      String(row.requests),
      formatMs(row.maxBlockMs),
      formatMs(row.maxAppendMs),
      `${(row.wallMs / 1000).toFixed(1)} s`,
      row.load.toFixed(1),
    ]),
    notes: [
      `one worker (a runtime on postgresStore, a fresh schema per case); a scripted model asks for one fetchPage call whose output is N MB of text, then answers; the deadline per case is ${deadlineMs / 1000} s`,
      "worker: base is the base checkout's worker as it was (before issue 26's defect 5 work: renewal on the event loop, the append's lease rows FOR SHARE, its own lapsed runs taken back at once); loop and thread are this checkout's with worker.renewal 'loop' and 'thread' (the default)",
      'requests: step.started facts (2 when nothing was re-sent); epochs: the (worker, epoch) pairs of the facts (one when no takeover)',
    ],
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const rows = await benchLargeOutputLease({
    ...(process.argv[2] === undefined ? {} : { base: path.resolve(process.argv[2]) }),
    mb: Number(process.env.TURNLOG_LEASE_BENCH_MB ?? 50),
    rounds: Number(process.env.TURNLOG_LEASE_BENCH_ROUNDS ?? 2),
  });
  const { formatTable } = await import('./table.ts');
  console.log(
    `load average at the end: ${loadavg()
      .map((value) => value.toFixed(2))
      .join(', ')}`,
  );
  console.log(formatTable(largeOutputLeaseTable(rows)));
}
