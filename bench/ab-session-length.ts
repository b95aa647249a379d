// Per step on top of 0 and of 10,000 facts (memoryStore, the 20-step conversation), two checkouts
// of turnlog and plain streamText interleaved in one process, in two ways:
//   cold: every turnlog round on a new runtime over a memoryStore seeded with the prior facts
//         (as bench/session-length.ts does)
//   warm: one runtime per side for all rounds (a long-running server): on top of 0, each round a
//         new session; on top of 10,000, each round the next run of the same session (which so
//         grows by one run, 99 facts, per round)
// Run: npx node bench/ab-session-length.ts <base checkout> [rounds=11]
// e.g. mkdir /tmp/base && git archive 9f3f3c1 | tar -x -C /tmp/base && ln -s "$PWD/node_modules" /tmp/base/
import path from 'node:path';
import { toAiSdkMessages } from '../adapters/message-conversion.ts';
import type { Fact } from '../events/facts.ts';
import { projectHistory } from '../events/project-history.ts';
import type { Runtime } from '../runtime.ts';
import type { EventStore } from '../store/event-store.ts';
import { storeModule } from './checkout-module.ts';
import { finishedRuns } from './long-session.ts';
import { interleave, median, sampleLists } from './stats.ts';
import { runStreamText } from './turnlog-side.ts';

type Side = typeof import('./turnlog-side.ts');
type Store = (options: { facts?: readonly Fact[] }) => EventStore;

const steps = 20;
const base = process.argv[2];
const rounds = Number(process.argv[3] ?? 11);
if (base === undefined) throw new Error('usage: ab-session-length.ts <base checkout> [rounds]');

async function load(root: string): Promise<{ side: Side; store: Store }> {
  const side = (await import(path.join(root, 'bench/turnlog-side.ts'))) as Side;
  const { memoryStore } = (await import(storeModule(root, 'memory/memory-store.ts'))) as {
    memoryStore: Store;
  };
  return { side, store: memoryStore };
}

const checkouts = {
  before: await load(path.resolve(base)),
  after: await load(path.resolve(import.meta.dirname, '..')),
};
const prior = await finishedRuns({ sessionId: 'long', steps, facts: 10_000 });
const history = toAiSdkMessages(projectHistory(prior, { provider: 'bench' }));

type Name =
  | 'streamText 0'
  | 'streamText 10k'
  | `${'before' | 'after'} ${'cold' | 'warm'} ${'0' | '10k'}`;
const sides = {} as Record<Name, () => Promise<unknown>>;
const prepare = {} as Partial<Record<Name, () => Promise<unknown>>>;
const runtimes: Runtime[] = [];
sides['streamText 0'] = () => runStreamText(steps, []);
sides['streamText 10k'] = () => runStreamText(steps, history);
for (const [label, { side, store }] of Object.entries(checkouts) as [
  'before' | 'after',
  { side: Side; store: Store },
][]) {
  for (const [length, facts] of [
    ['0', []],
    ['10k', prior],
  ] as const) {
    let cold: Runtime | undefined;
    prepare[`${label} cold ${length}`] = async () => {
      await cold?.close();
      cold = side.conversationRuntime({ store: store({ facts }), steps });
      runtimes.push(cold);
    };
    sides[`${label} cold ${length}`] = () =>
      side.runTurnlog({ runtime: cold as Runtime, sessionId: 'long', steps });
    const warm = side.conversationRuntime({ store: store({ facts }), steps });
    runtimes.push(warm);
    let session = 0;
    sides[`${label} warm ${length}`] = () => {
      session += 1;
      return side.runTurnlog({
        runtime: warm,
        sessionId: length === '0' ? `fresh_${session}` : 'long',
        steps,
      });
    };
  }
}

const cpu = sampleLists(Object.keys(sides) as Name[]);
const started = (await import('node:os')).loadavg();
const samples = await interleave({ rounds, warmup: 2, cpu, prepare, sides });
const ended = (await import('node:os')).loadavg();
for (const runtime of runtimes) await runtime.close().catch(() => {});

const perStep = (name: Name) => median(samples[name]) / steps;
const cpuStep = (name: Name) => median(cpu[name]) / steps;
const ms = (value: number) => `${value.toFixed(2)} ms`;
console.log(
  `load average ${started.map((value) => value.toFixed(2)).join(', ')} at the start, ${ended.map((value) => value.toFixed(2)).join(', ')} at the end; ${rounds} rounds after 2 warm-ups, medians per step`,
);
console.log(
  '| side | on top of 0, wall | on top of 10,000, wall | 10,000 vs 0, wall | on top of 0, CPU | on top of 10,000, CPU | 10,000 vs 0, CPU |',
);
console.log('|---|---|---|---|---|---|---|');
const row = (label: string, zero: Name, long: Name) =>
  console.log(
    `| ${label} | ${ms(perStep(zero))} | ${ms(perStep(long))} | ${(perStep(long) / perStep(zero)).toFixed(2)}× | ${ms(cpuStep(zero))} | ${ms(cpuStep(long))} | ${(cpuStep(long) / cpuStep(zero)).toFixed(2)}× |`,
  );
row('plain streamText (the same history as messages)', 'streamText 0', 'streamText 10k');
for (const label of ['before', 'after'] as const)
  for (const mode of ['cold', 'warm'] as const)
    row(`turnlog ${label}, ${mode}`, `${label} ${mode} 0`, `${label} ${mode} 10k`);
