// Compares the cold read of a 10,000-fact lowdbStore session between two checkouts of turnlog,
// in separate processes taking turns, in CPU time (a shared machine's load moves wall time more
// than the difference measured).
// Run: npx node bench/ab-cold-read.ts <base checkout> [<other checkout>, default: this one]
// e.g. mkdir /tmp/base && git archive 61e5670 | tar -x -C /tmp/base && ln -s "$PWD/node_modules" /tmp/base/
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { storeModule } from './checkout-module.ts';
import { benchStore } from './store.ts';

const rounds = 12;

const readsPerProcess = 6;

/** In a child: `readsPerProcess` cold reads of session `cold` with `root`'s store; CPU ms each. */
async function readCold(root: string, dir: string): Promise<number[]> {
  const { lowdbStore } = (await import(storeModule(root, 'folder/lowdb-store.ts'))) as {
    lowdbStore: typeof import('../store/folder/lowdb-store.ts').lowdbStore;
  };
  const times: number[] = [];
  for (let read = 0; read < readsPerProcess; read += 1) {
    const store = lowdbStore({ dir });
    const before = process.cpuUsage();
    const facts = await store.read('cold');
    const used = process.cpuUsage(before);
    times.push((used.user + used.system) / 1000);
    await store.close();
    if (facts.length !== 10_000) throw new Error(`bench: read ${facts.length} facts, not 10,000`);
  }
  return times;
}

const median = (values: number[]) =>
  [...values].sort((left, right) => left - right)[Math.floor(values.length / 2)] ?? Number.NaN;

async function compare(base: string, other: string): Promise<void> {
  const dir = await mkdtemp(path.join(tmpdir(), 'turnlog-ab-'));
  try {
    await benchStore({ dir, samples: 5, concurrentAppends: 2 }); // writes session `cold`
    const sides = { base, other };
    const first: Record<string, number[]> = { base: [], other: [] };
    const later: Record<string, number[]> = { base: [], other: [] };
    for (let round = 0; round < rounds; round += 1) {
      const order = round % 2 === 0 ? (['base', 'other'] as const) : (['other', 'base'] as const);
      for (const side of order) {
        const output = execFileSync(
          process.execPath,
          [fileURLToPath(import.meta.url), '--child', sides[side], dir],
          { encoding: 'utf8' },
        );
        const [head, ...rest] = JSON.parse(output) as number[];
        first[side]?.push(head ?? Number.NaN);
        later[side]?.push(Math.min(...rest));
      }
    }
    for (const side of ['base', 'other'] as const) {
      console.log(
        `${side} (${sides[side]}): first read in a process ${median(first[side] ?? []).toFixed(1)} ms CPU, later reads ${median(later[side] ?? []).toFixed(1)} ms CPU (medians of ${rounds} processes)`,
      );
    }
    const ratio = (values: Record<string, number[]>) =>
      (median(values.other ?? []) / median(values.base ?? [])).toFixed(2);
    console.log(`other/base: first read ${ratio(first)}×, later reads ${ratio(later)}×`);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const [mode, ...args] = process.argv.slice(2);
if (mode === '--child') {
  const [root = '', dir = ''] = args;
  console.log(JSON.stringify(await readCold(root, dir)));
} else if (mode === undefined) {
  throw new Error('usage: npx node bench/ab-cold-read.ts <base checkout> [<other checkout>]');
} else {
  const here = path.resolve(fileURLToPath(new URL('..', import.meta.url)));
  await compare(path.resolve(mode), path.resolve(args[0] ?? here));
}
