// A worker's CPU per step on postgresStore, and the notifications it receives (issue 26, item 3).
// Each configuration `WxR` starts W worker processes (this file in child mode: a runtime on
// postgresStore, the 20-step conversation with the zero-latency scripted model, R runs in flight
// each) on a fresh schema, and measures in one window: steps, the workers' CPU (process.cpuUsage),
// the notifications each worker's pg connections received (counted on pg.Client's 'notification'
// event), and the store calls. With `profile`, worker 0 also runs the V8 sampling profiler in the
// window and reports its self time per step grouped by module (the profiler adds its own cost:
// read the shares, and the CPU of a run without it).
// Run: npx node bench/worker-cpu.ts [configs=1x16,4x4,1x64] [profile] [rounds=1]
// The server is TURNLOG_BENCH_PG, else 127.0.0.1:5432/test; schema turnlog_bench_cpu (dropped).
import { type ChildProcess, spawn } from 'node:child_process';
import { Session } from 'node:inspector/promises';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { z } from 'zod';
import { createRuntime } from '../runtime.ts';
import type { EventStore } from '../store/event-store.ts';
import { memoryStore } from '../store/memory/memory-store.ts';
import { postgresStore } from '../store/postgres/postgres-store.ts';
import { defineTool } from '../tools/define-tool.ts';
import { addTool, conversationModel, conversationPrompt } from './conversation.ts';

interface ChildOptions {
  connectionString: string;
  schema: string;
  workerId: string;
  inFlight: number;
  steps: number;
  warmupMs: number;
  windowMs: number;
  profile: boolean;
  /** `memory`: the same runtime on memoryStore, the baseline without a database. */
  store: 'postgres' | 'memory';
}

/** What a child reports after its window. */
interface ChildResult {
  workerId: string;
  steps: number;
  cpuMs: number;
  /** The kernel's part of `cpuMs`. */
  systemMs: number;
  notifications: number;
  calls: Record<string, number>;
  /** Self time in the window by module (profiled child only), ms. */
  modules: Record<string, number>;
  /** Self time by function (profiled child only), ms: the top ones. */
  functions: Record<string, number>;
}

const server = () => {
  const url = process.env.TURNLOG_BENCH_PG;
  return url !== undefined && url !== '' ? url : 'postgres://postgres@127.0.0.1:5432/test';
};
const load = () =>
  loadavg()
    .map((value) => value.toFixed(2))
    .join(', ');

// ---------------------------------------------------------------------------------------------
// Child

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** This checkout's folder, as the profiler names its files (file:///…/). */
const checkout = new URL('..', import.meta.url).href;

/** The module a sampled function's self time counts in: a file of turnlog, a package, a part of Node. */
function moduleOf(url: string, functionName: string): string {
  if (/^\((garbage collector|idle|program)\)$/.test(functionName)) return functionName;
  if (url === '') return '(builtin, no caller)';
  if (url.includes('/node_modules/')) {
    const match = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
    return `package ${match?.[1] ?? '?'}`;
  }
  if (url.startsWith('node:')) return url.split('/').slice(0, 2).join('/');
  return url.startsWith(checkout) ? url.slice(checkout.length) : url;
}

/** Self time per module and per function; a builtin (no url) counts where it was called from. */
function summarize(profile: Profile) {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parents = new Map<number, ProfileNode>();
  for (const node of profile.nodes)
    for (const child of node.children ?? []) parents.set(child, node);
  const modules: Record<string, number> = {};
  const functions: Record<string, number> = {};
  for (const [index, id] of profile.samples.entries()) {
    const sampled = byId.get(id);
    if (sampled === undefined) continue;
    let node = sampled;
    const special = /^\(.*\)$/.test(node.callFrame.functionName);
    while (!special && node.callFrame.url === '' && parents.get(node.id) !== undefined)
      node = parents.get(node.id) as ProfileNode;
    const ms = (profile.timeDeltas[index] ?? 0) / 1000;
    const module = moduleOf(node.callFrame.url, node.callFrame.functionName);
    modules[module] = (modules[module] ?? 0) + ms;
    const name = `${sampled.callFrame.functionName || '(anonymous)'}${sampled === node ? '' : ` <- ${node.callFrame.functionName || '(anonymous)'}`} [${module}]`;
    functions[name] = (functions[name] ?? 0) + ms;
  }
  const top = Object.entries(functions)
    .sort((left, right) => right[1] - left[1])
    .slice(0, 40);
  return { modules, functions: Object.fromEntries(top) };
}

function countingStore(store: EventStore) {
  const calls: Record<string, number> = {};
  let counting = false;
  const wrapped = new Proxy(store, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver);
      if (typeof value !== 'function' || typeof key !== 'string') return value;
      const bound = value.bind(target);
      return (...args: unknown[]) => {
        if (counting) calls[key] = (calls[key] ?? 0) + 1;
        return bound(...args);
      };
    },
  });
  return {
    store: wrapped,
    count: (on: boolean) => {
      counting = on;
    },
    calls,
  };
}

async function child(options: ChildOptions): Promise<void> {
  let notifications = 0;
  const emit = pg.Client.prototype.emit;
  pg.Client.prototype.emit = function (
    this: pg.Client,
    event: string | symbol,
    ...args: unknown[]
  ) {
    if (event === 'notification') notifications += 1;
    return emit.call(this, event, ...args);
  };
  const counting = countingStore(
    options.store === 'memory'
      ? memoryStore()
      : postgresStore({ connectionString: options.connectionString, schema: options.schema }),
  );
  const addInput = z.object({ a: z.number(), b: z.number() });
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
    ...(options.store === 'memory' ? {} : { worker: { id: options.workerId } }),
  });
  let sessions = 0;
  let inWindow = false;
  let stopping = false;
  let steps = 0;
  const conversation = async () => {
    sessions += 1;
    const turn = await runtime.send({
      sessionId: `${options.workerId}_s${sessions}`,
      text: conversationPrompt,
    });
    for await (const event of turn.events)
      if (event.type === 'step.completed' && inWindow) steps += 1;
    const outcome = await turn.done;
    if (outcome.status !== 'completed') throw new Error(`run ${outcome.status}: ${outcome.reason}`);
  };
  await conversation();
  process.stdout.write('ready\n');
  await new Promise<void>((resolve) => process.stdin.once('data', () => resolve()));
  const loops = Array.from({ length: options.inFlight }, async () => {
    // A turn so the timers fire: on memoryStore a conversation may never leave the microtasks.
    while (!stopping) {
      await conversation();
      await new Promise((resolve) => setImmediate(resolve));
    }
  });
  await sleep(options.warmupMs);
  const session = new Session();
  if (options.profile) {
    session.connect();
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: 500 });
    await session.post('Profiler.start');
  }
  inWindow = true;
  counting.count(true);
  const notificationsBefore = notifications;
  const cpuBefore = process.cpuUsage();
  await sleep(options.windowMs);
  const cpu = process.cpuUsage(cpuBefore);
  inWindow = false;
  counting.count(false);
  const received = notifications - notificationsBefore;
  let summary = { modules: {}, functions: {} };
  if (options.profile) {
    const { profile } = (await session.post('Profiler.stop')) as { profile: Profile };
    session.disconnect();
    summary = summarize(profile);
  }
  stopping = true;
  await Promise.all(loops);
  await runtime.close();
  const result: ChildResult = {
    workerId: options.workerId,
    steps,
    cpuMs: (cpu.user + cpu.system) / 1000,
    systemMs: cpu.system / 1000,
    notifications: received,
    calls: counting.calls,
    ...summary,
  };
  process.stdout.write(`result ${JSON.stringify(result)}\n`);
  process.exit(0);
}

// ---------------------------------------------------------------------------------------------
// Parent

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The modules only a database store runs: node-postgres, store/postgres/, sockets and buffers. */
const databaseModule =
  /^package pg|^store\/postgres\/|stream_base_commons|^node:net|^node:buffer|^node:internal\/buffer|^node:internal\/crypto/;

function startChild(options: ChildOptions) {
  const process_: ChildProcess = spawn(
    process.execPath,
    [fileURLToPath(import.meta.url), 'child', JSON.stringify(options)],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  let buffered = '';
  const lines: string[] = [];
  const waiters: (() => void)[] = [];
  process_.stdout?.setEncoding('utf8');
  process_.stdout?.on('data', (chunk: string) => {
    buffered += chunk;
    const parts = buffered.split('\n');
    buffered = parts.pop() ?? '';
    lines.push(...parts);
    for (const wake of waiters.splice(0)) wake();
  });
  const line = async (prefix: string): Promise<string> => {
    while (true) {
      const found = lines.find((text) => text.startsWith(prefix));
      if (found !== undefined) return found.slice(prefix.length).trim();
      if (process_.exitCode !== null) throw new Error(`child exited before ${prefix}`);
      await new Promise<void>((resolve) => {
        waiters.push(resolve);
        setTimeout(resolve, 500);
      });
    }
  };
  return { process: process_, line };
}

interface Config {
  workers: number;
  inFlight: number;
  store: 'postgres' | 'memory';
}

async function measure(config: Config, profile: boolean) {
  const schema = 'turnlog_bench_cpu';
  const admin = new pg.Client({ connectionString: server() });
  await admin.connect();
  await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  const children = Array.from({ length: config.workers }, (_, index) =>
    startChild({
      connectionString: server(),
      schema,
      workerId: `w${index}`,
      inFlight: config.inFlight,
      steps: 20,
      warmupMs: 1_500,
      windowMs: 5_000,
      profile: profile && index === 0,
      store: config.store,
    }),
  );
  // The first child migrates the schema alone; the others open it after.
  for (const started of children) await started.line('ready');
  const startLoad = load();
  for (const started of children) started.process.stdin?.write('go\n');
  const results = await Promise.all(
    children.map(async (started) => JSON.parse(await started.line('result')) as ChildResult),
  );
  await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await admin.end();
  return { results, load: `${startLoad} → ${load()}` };
}

if (import.meta.main) {
  if (process.argv[2] === 'child') {
    await child(JSON.parse(process.argv[3] ?? '{}') as ChildOptions);
  } else {
    const args = process.argv.slice(2);
    const profile = args.includes('profile');
    const rounds = Number(args.find((arg) => arg.startsWith('rounds='))?.slice(7) ?? 1);
    const configs = (args.find((arg) => /^\d+x\d+/.test(arg)) ?? '1x16,4x4,1x64')
      .split(',')
      .map((text): Config => {
        const [workers, inFlight] = text.replace(/m$/, '').split('x').map(Number);
        const store = text.endsWith('m') ? 'memory' : 'postgres';
        return { workers: workers ?? 1, inFlight: inFlight ?? 16, store };
      });
    console.log(`node ${process.version}, ${new Date().toISOString()}`);
    for (let round = 0; round < rounds; round += 1) {
      for (const config of configs) {
        const { results, load: measuredLoad } = await measure(config, profile);
        const steps = results.reduce((sum, result) => sum + result.steps, 0);
        const cpu = results.reduce((sum, result) => sum + result.cpuMs, 0);
        const system = results.reduce((sum, result) => sum + result.systemMs, 0);
        const notifications = results.reduce((sum, result) => sum + result.notifications, 0);
        const calls: Record<string, number> = {};
        for (const result of results)
          for (const [name, count] of Object.entries(result.calls))
            calls[name] = (calls[name] ?? 0) + count;
        console.log(
          `\n${config.workers}x${config.inFlight} ${config.store}: ${(steps / 5).toFixed(0)} steps/s, worker CPU ${(cpu / steps).toFixed(2)} ms/step (kernel ${(system / steps).toFixed(2)}), notifications received ${(notifications / steps).toFixed(2)}/step (all workers), load ${measuredLoad}`,
        );
        console.log(
          `  store calls per step: ${Object.entries(calls)
            .map(([name, count]) => `${name} ${(count / steps).toFixed(3)}`)
            .join(', ')}`,
        );
        const profiled = results[0];
        if (profile && profiled !== undefined && profiled.steps > 0) {
          const perStep = (ms: number) => (ms / profiled.steps).toFixed(3);
          const total = Object.values(profiled.modules).reduce((sum, ms) => sum + ms, 0);
          console.log(
            `  profile of ${profiled.workerId}: ${perStep(total)} ms/step sampled (${profiled.steps} steps)`,
          );
          const modules = Object.entries(profiled.modules).sort((a, b) => b[1] - a[1]);
          for (const [name, ms] of modules)
            if (ms / profiled.steps >= 0.01) console.log(`    ${perStep(ms).padStart(7)}  ${name}`);
          // What a store without a database does not pay: the driver, its protocol, the sockets.
          const database = modules.filter(([name]) => databaseModule.test(name));
          const databaseMs = database.reduce((sum, [, ms]) => sum + ms, 0);
          console.log(`  database side (${databaseModule.source}): ${perStep(databaseMs)} ms/step`);
          console.log('  top functions (self, ms/step):');
          for (const [name, ms] of Object.entries(profiled.functions))
            console.log(`    ${perStep(ms).padStart(7)}  ${name}`);
        }
      }
    }
  }
}
