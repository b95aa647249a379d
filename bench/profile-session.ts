// Where a step's CPU time goes, on top of 0 and of 10,000 facts: the V8 sampling profiler
// (through node:inspector) over turns of the 20-step conversation on memoryStore, self time per
// step grouped by where the code lives. Not a benchmark (the profiler inflates every total); it
// says which part grows with the session.
// Run: npx node bench/profile-session.ts [turns=11] [mode=cold|warm]
//   cold: each turn on a new runtime and store seeded with the prior facts (bench/session-length.ts)
//   warm: one runtime and store per length; each turn is the next run of the same session
// The two lengths' turns alternate (after two warm-up turns each), so neither gets a colder JIT.

import { Session } from 'node:inspector/promises';
import type { Fact } from '../events/facts.ts';
import type { Runtime } from '../runtime.ts';
import { memoryStore } from '../store/memory/memory-store.ts';
import { finishedRuns } from './long-session.ts';
import { conversationRuntime, runTurnlog } from './turnlog-side.ts';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const steps = 20;
const sessionId = 'session_1';

/** The group a function's self time counts in. */
function group(node: ProfileNode): string {
  const { url, functionName } = node.callFrame;
  if (functionName === '(garbage collector)') return 'garbage collector';
  if (functionName === '(idle)' || functionName === '(program)') return `${functionName}`;
  if (url === 'node:inspector') return '(idle)'; // the profiler's own session calls
  if (url.includes('/node_modules/ai/')) {
    return /convertToLanguageModel|downloadAssets|convertPartToLanguageModelPart|mapToolResultOutput|getDownloadableFilePart|convertImagePartToFilePart|standardizePrompt/.test(
      functionName,
    )
      ? 'AI SDK prompt conversion'
      : 'AI SDK, other';
  }
  if (url.includes('/node_modules/xstate/')) return 'XState';
  if (url.includes('/node_modules/')) return 'other packages';
  const local = /\/wt-[^/]+\/|\/main\//.exec(url) ? url.replace(/^.*?\/(wt-[^/]+|main)\//, '') : '';
  if (local.startsWith('events/')) return 'turnlog events/';
  if (local.startsWith('store/')) return 'turnlog store/';
  if (local.startsWith('adapters/scripted-model') || local.startsWith('bench/'))
    return 'the scripted model, the bench';
  if (local.startsWith('adapters/')) return 'turnlog adapters/';
  if (local !== '') return 'turnlog machines/, tools/, runtime';
  return 'web streams, promises, other Node';
}

/** One length's runtime and turn counter; cold makes a new runtime before every turn. */
async function lengthSide(prior: Fact[], mode: 'cold' | 'warm') {
  // Warm on top of 0: each turn a new session of the same runtime (the session does not grow).
  let turnNumber = 0;
  let runtime: Runtime | undefined;
  const fresh = async () => {
    await runtime?.close();
    runtime = conversationRuntime({ store: memoryStore({ facts: prior }), steps });
  };
  await fresh();
  const turn = async () => {
    turnNumber += 1;
    const session = prior.length === 0 && mode === 'warm' ? `fresh_${turnNumber}` : sessionId;
    await runTurnlog({ runtime: runtime as Runtime, sessionId: session, steps });
  };
  await turn(); // warm-up
  await turn();
  return {
    before: async () => {
      if (mode === 'cold') await fresh();
    },
    turn,
    close: () => runtime?.close(),
  };
}
let totals = new Map<string, number>();
let functions = new Map<string, number>();
function accumulate(profile: Profile) {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parents = new Map<number, ProfileNode>();
  for (const node of profile.nodes)
    for (const child of node.children ?? []) parents.set(child, node);
  for (const [index, id] of profile.samples.entries()) {
    let node = byId.get(id);
    if (node === undefined) continue;
    // A builtin (JSON.stringify, Array.prototype.map, a hash update: no url) counts where it
    // was called from.
    const special = /^\((garbage collector|idle|program)\)$/.test(node.callFrame.functionName);
    while (!special && node.callFrame.url === '' && parents.get(node.id) !== undefined) {
      node = parents.get(node.id) as ProfileNode;
    }
    const name = group(node);
    const sampled = byId.get(id) as ProfileNode;
    const key = `${name} :: ${sampled.callFrame.functionName} ${sampled.callFrame.url.replace(/^.*\//, '')} <- ${node.callFrame.functionName}`;
    functions.set(key, (functions.get(key) ?? 0) + (profile.timeDeltas[index] ?? 0) / 1000);
    totals.set(name, (totals.get(name) ?? 0) + (profile.timeDeltas[index] ?? 0) / 1000);
  }
}

if (import.meta.main) {
  const turns = Number(process.argv[2] ?? 11);
  const mode = process.argv[3] === 'warm' ? 'warm' : 'cold';
  const lengths = [0, 10_000];
  const sides = [];
  for (const length of lengths) {
    const prior = length === 0 ? [] : await finishedRuns({ sessionId, steps, facts: length });
    sides.push(await lengthSide(prior, mode));
  }
  // The two lengths' turns alternate, so the JIT and the heap treat both alike.
  const profiles = lengths.map(() => ({
    totals: new Map<string, number>(),
    functions: new Map<string, number>(),
    wall: 0,
  }));
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 500 });
  for (let turn = 0; turn < turns; turn += 1) {
    for (const [index, side] of sides.entries()) {
      const into = profiles[index] as (typeof profiles)[number];
      await side.before();
      totals = into.totals;
      functions = into.functions;
      await session.post('Profiler.start');
      const before = performance.now();
      await side.turn();
      into.wall += performance.now() - before;
      const { profile } = (await session.post('Profiler.stop')) as { profile: Profile };
      accumulate(profile);
    }
  }
  session.disconnect();
  for (const side of sides) await side.close();
  const columns: Map<string, number>[] = [];
  const walls: number[] = [];
  for (const [index, length] of lengths.entries()) {
    const into = profiles[index] as (typeof profiles)[number];
    walls.push(into.wall / (turns * steps));
    if (process.env.PROFILE_TOP !== undefined) {
      const top = [...into.functions]
        .sort((a, b) => b[1] - a[1])
        .slice(0, Number(process.env.PROFILE_TOP));
      console.log(`top functions on top of ${length} facts, ms per step:`);
      for (const [key, total] of top)
        console.log(`  ${(total / (turns * steps)).toFixed(3)}  ${key}`);
    }
    columns.push(new Map([...into.totals].map(([name, ms]) => [name, ms / (turns * steps)])));
  }
  const names = [...new Set(columns.flatMap((column) => [...column.keys()]))].filter(
    (name) => name !== '(idle)',
  );
  const [zero, long] = columns as [Map<string, number>, Map<string, number>];
  names.sort((left, right) => (long.get(right) ?? 0) - (long.get(left) ?? 0));
  const ms = (value: number) => `${value.toFixed(2)} ms`;
  console.log(
    `mode ${mode}, ${turns} turns of ${steps} steps per length after two warm-up turns, the lengths' turns alternating, self time per step`,
  );
  console.log('| where | on top of 0 facts | on top of 10,000 | growth |');
  console.log('|---|---|---|---|');
  let sumZero = 0;
  let sumLong = 0;
  for (const name of names) {
    const a = zero.get(name) ?? 0;
    const b = long.get(name) ?? 0;
    sumZero += a;
    sumLong += b;
    console.log(
      `| ${name} | ${ms(a)} | ${ms(b)} | ${b - a >= 0 ? '+' : ''}${(b - a).toFixed(2)} |`,
    );
  }
  console.log(
    `| **total (busy)** | **${ms(sumZero)}** | **${ms(sumLong)}** | **+${(sumLong - sumZero).toFixed(2)}** |`,
  );
  console.log(`wall per step while profiled: ${ms(walls[0] ?? 0)} and ${ms(walls[1] ?? 0)}`);
}
