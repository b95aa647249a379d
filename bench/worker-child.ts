// One worker process of the workers benchmark (bench/workers.ts): a turnlog runtime on
// postgresStore, as a production replica runs it. It talks to the parent one line at a time
// (stdout), and reads commands from stdin.
//   throughput  runs the 20-step conversation in `inFlight` sessions at a time after `go`,
//               counts the steps completed in the measured window, the process's CPU time in
//               it, and the store calls it made; prints `ready`, then `result <json>`
//   victim      sends one run whose `work` tool never returns (scenario `tool`) or whose model
//               stream stalls after its first text (scenario `stream`); prints `started <runId>`
//               once the tool executes or the first delta arrived, then waits for its SIGKILL
//   taker       a worker that only takes over expired leases (its model answers with a text at
//               once); prints `ready`; closes when stdin ends
// Usage: node bench/worker-child.ts '<ChildOptions as JSON>'

import path from 'node:path';
import type { LanguageModelV4 } from '@ai-sdk/provider';
import pg from 'pg';
import { z } from 'zod';
import { scriptedModel } from '../adapters/scripted-model.ts';
import { createRuntime, type Runtime } from '../runtime.ts';
import type { EventStore } from '../store/event-store.ts';
import { postgresStore } from '../store/postgres/postgres-store.ts';
import { defineTool } from '../tools/define-tool.ts';
import { addTool, conversationModel, conversationPrompt } from './conversation.ts';

/** What the parent passes (as JSON in argv[2]). */
export type ChildOptions =
  | {
      mode: 'throughput';
      /** Another checkout of turnlog whose runtime and store to run (A/B); default this one. */
      root?: string;
      connectionString: string;
      schema: string;
      workerId: string;
      leaseMs?: number;
      steps: number;
      inFlight: number;
      warmupMs: number;
      windowMs: number;
    }
  | {
      mode: 'victim';
      connectionString: string;
      schema: string;
      workerId: string;
      leaseMs: number;
      sessionId: string;
      scenario: 'tool' | 'stream';
    }
  | { mode: 'taker'; connectionString: string; schema: string; workerId: string; leaseMs: number };

/** What a throughput child reports after its window. */
export interface ThroughputResult {
  workerId: string;
  /** `step.completed` facts of this worker's runs that arrived inside the window. */
  steps: number;
  /** Conversations started and ended inside the window, wall ms each. */
  conversationMs: number[];
  /** User + system CPU of this process inside the window (every thread), ms. */
  cpuMs: number;
  /** The system (kernel) part of `cpuMs`. */
  systemMs: number;
  /** Store calls inside the window, by method (append, read, renewLeases, …). */
  calls: Record<string, number>;
  /** Facts this worker appended inside the window. */
  facts: number;
  /** Messages its node-postgres clients sent inside the window (one round trip each). */
  roundTrips: number;
}

const json = process.argv[2];
if (json === undefined) throw new Error("usage: worker-child.ts '<ChildOptions as JSON>'");
const options = JSON.parse(json) as ChildOptions;
// Pipes are written synchronously on Linux: once printed, the parent can see it.
const print = (line: string) => process.stdout.write(`${line}\n`);
// The process ends when the parent says so (stdin, or SIGKILL), never because its event loop
// emptied (the worker's timers are unref'd, a held tool keeps nothing alive).
const keepAlive = setInterval(() => {}, 60_000);

/** The store, counting its calls (the transactions of a step: every call is one or a read). */
function countingStore(store: EventStore) {
  const calls: Record<string, number> = {};
  let facts = 0;
  let counting = false;
  const wrapped = new Proxy(store, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver);
      if (typeof value !== 'function') return value;
      const bound = value.bind(target);
      if (typeof key !== 'string') return bound;
      return (...args: unknown[]) => {
        if (counting) {
          calls[key] = (calls[key] ?? 0) + 1;
          if (key === 'append') facts += (args[1] as unknown[]).length;
        }
        return bound(...args);
      };
    },
  });
  return {
    store: wrapped,
    start() {
      counting = true;
    },
    stop() {
      counting = false;
      return { calls: { ...calls }, facts };
    },
  };
}

/** The store, printing `took <runId> <Date.now()>` when a takeover scan took a run's lease. */
function reportingTakeovers(store: ReturnType<typeof postgresStore>) {
  return new Proxy(store, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver);
      if (typeof value !== 'function') return value;
      const bound = value.bind(target);
      if (key !== 'takeOverExpiredLeases') return bound;
      return async (...args: unknown[]) => {
        const taken = (await bound(...args)) as { runId: string }[];
        const now = Date.now();
        for (const lease of taken) print(`took ${lease.runId} ${now}`);
        return taken;
      };
    },
  });
}

const addInput = z.object({ a: z.number(), b: z.number() });
const workInput = z.object({ job: z.string() });

function lines(onLine: (line: string) => void, onEnd: () => void) {
  let buffered = '';
  process.stdin.setEncoding('utf8');
  process.stdin.on('data', (chunk: string) => {
    buffered += chunk;
    for (let end = buffered.indexOf('\n'); end >= 0; end = buffered.indexOf('\n')) {
      onLine(buffered.slice(0, end));
      buffered = buffered.slice(end + 1);
    }
  });
  process.stdin.on('end', onEnd);
}

const cpuNow = () => {
  const usage = process.cpuUsage();
  return { total: (usage.user + usage.system) / 1000, system: usage.system / 1000 };
};

/**
 * Counts the messages of every node-postgres client in this process while `counting`: each
 * `query` is one message and one round trip (the store's pool, its LISTEN connection).
 */
function countingRoundTrips() {
  const query = pg.Client.prototype.query as (...args: unknown[]) => unknown;
  let counting = false;
  let count = 0;
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    if (counting) count += 1;
    return query.apply(this, args);
  } as typeof pg.Client.prototype.query;
  return {
    start() {
      counting = true;
    },
    stop() {
      counting = false;
      return count;
    },
  };
}

/** The runtime and store of the checkout at `root` (A/B runs), or of this one. */
async function library(root: string | undefined) {
  if (root === undefined) return { createRuntime, postgresStore, defineTool };
  const load = (file: string) => import(path.join(root, file));
  return {
    createRuntime: (await load('runtime.ts')).createRuntime as typeof createRuntime,
    postgresStore: (await load('store/postgres/postgres-store.ts'))
      .postgresStore as typeof postgresStore,
    defineTool: (await load('tools/define-tool.ts')).defineTool as typeof defineTool,
  };
}

if (options.mode === 'throughput') {
  const { createRuntime, postgresStore, defineTool } = await library(options.root);
  const roundTrips = countingRoundTrips();
  const counting = countingStore(
    postgresStore({ connectionString: options.connectionString, schema: options.schema }),
  );
  const runtime = createRuntime({
    model: conversationModel(options.steps),
    tools: {
      add: defineTool({
        description: addTool.description,
        inputSchema: addInput,
        execute: (input) => addTool.execute(input),
      }),
    },
    store: counting.store,
    limits: { maxSteps: options.steps },
    worker: {
      id: options.workerId,
      ...(options.leaseMs === undefined ? {} : { leaseMs: options.leaseMs }),
    },
  });
  const { steps: expected, workerId } = options;
  let sessions = 0;
  let inWindow = false;
  let stopping = false;
  let steps = 0;
  let windowStart = 0;
  const conversationMs: number[] = [];
  /** One conversation in a new session; counts its steps that complete inside the window. */
  async function conversation(runtime: Runtime) {
    sessions += 1;
    const started = performance.now();
    const startedInWindow = inWindow;
    const turn = await runtime.send({
      sessionId: `${workerId}_s${sessions}`,
      text: conversationPrompt,
    });
    for await (const event of turn.events)
      if (event.type === 'step.completed' && inWindow) steps += 1;
    const outcome = await turn.done;
    if (outcome.status !== 'completed' || outcome.steps !== expected) {
      throw new Error(
        `worker ${workerId}: ${outcome.status} (${outcome.reason}) after ${outcome.steps} steps, expected completed after ${expected}`,
      );
    }
    if (startedInWindow && inWindow && started >= windowStart) {
      conversationMs.push(performance.now() - started);
    }
  }
  // One untimed conversation: the code is loaded, the pool has a connection.
  await conversation(runtime);
  sessions = 0;
  print('ready');
  lines(
    async (line) => {
      if (line !== 'go') return;
      const loops = Array.from({ length: options.inFlight }, async () => {
        while (!stopping) await conversation(runtime);
      });
      let cpuStart = { total: 0, system: 0 };
      setTimeout(() => {
        inWindow = true;
        windowStart = performance.now();
        cpuStart = cpuNow();
        counting.start();
        roundTrips.start();
      }, options.warmupMs);
      setTimeout(async () => {
        inWindow = false;
        const cpuEnd = cpuNow();
        const cpuMs = cpuEnd.total - cpuStart.total;
        const systemMs = cpuEnd.system - cpuStart.system;
        const counted = counting.stop();
        const trips = roundTrips.stop();
        stopping = true;
        // Every run ends before the worker closes: none is left for the next measurement's
        // workers to take over.
        await Promise.all(loops);
        await runtime.close();
        const result: ThroughputResult = {
          workerId,
          steps,
          conversationMs,
          cpuMs,
          systemMs,
          ...counted,
          roundTrips: trips,
        };
        print(`result ${JSON.stringify(result)}`);
        clearInterval(keepAlive);
        process.stdin.destroy();
      }, options.warmupMs + options.windowMs);
    },
    () => {},
  );
} else {
  const stream = options.mode === 'victim' && options.scenario === 'stream';
  // The victim's model: a call of `work` (scenario tool), or a first text and a stall (stream).
  // The taker's: a text at once, whatever the prompt.
  const model: LanguageModelV4 =
    options.mode === 'taker'
      ? scriptedModel(Array.from({ length: 1000 }, () => ({ text: 'Taken over.' })))
      : scriptedModel([
          stream
            ? { text: ['Thinking '], stall: true }
            : {
                text: 'Working.',
                toolCalls: [{ id: 'call_w', name: 'work', input: { job: 'j1' } }],
              },
        ]);
  let executing: (() => void) | undefined;
  const shared = postgresStore({
    connectionString: options.connectionString,
    schema: options.schema,
  });
  const runtime = createRuntime({
    model,
    tools: {
      work: defineTool({
        description: 'Does a job that takes as long as it takes.',
        inputSchema: workInput,
        execute: async (_input, { signal }) => {
          executing?.();
          // Never returns by itself: the worker dies while it runs.
          await new Promise((_, reject) =>
            signal.addEventListener('abort', () => reject(signal.reason)),
          );
          return 'done';
        },
      }),
    },
    store: options.mode === 'taker' ? reportingTakeovers(shared) : shared,
    worker: { id: options.workerId, leaseMs: options.leaseMs },
  });
  if (options.mode === 'taker') {
    print('ready');
    lines(
      () => {},
      async () => {
        await runtime.close();
        clearInterval(keepAlive);
      },
    );
  } else {
    const running = new Promise<void>((resolve) => {
      executing = resolve;
    });
    const turn = await runtime.send({ sessionId: options.sessionId, text: 'Do the job.' });
    if (stream) {
      // The stream stalls after its first delta: the request is in flight when the kill lands.
      for await (const event of turn.events) {
        if (event.type !== 'text.delta') continue;
        print(`started ${turn.runId}`);
        break;
      }
    } else {
      await running;
      print(`started ${turn.runId}`);
    }
  }
}
