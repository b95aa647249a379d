// Rehydration of a 10,000-fact session from a cold lowdbStore: open the store, read the session,
// fold its unfinished run through the turn machine (foldRun), and project history, read model
// and recovery plan; and the whole `createRuntime().recover()` on a copy of the same folder.
// Run alone: npx node bench/rehydration.ts
import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Fact, NewFact } from '../events/facts.ts';
import { planRecovery } from '../events/plan-recovery.ts';
import { projectHistory } from '../events/project-history.ts';
import { projectTurn } from '../events/project-turn.ts';
import { foldRun } from '../machines/pure/rehydrate.ts';
import { lowdbStore } from '../store/folder/lowdb-store.ts';
import { memoryStore } from '../store/memory/memory-store.ts';
import { conversationPrompt } from './conversation.ts';
import { finishedRuns } from './long-session.ts';
import { median, timed } from './stats.ts';
import { type BenchTable, formatMs } from './table.ts';
import { conversationRuntime } from './turnlog-side.ts';

/** Options of {@link benchRehydration}. */
export interface RehydrationBenchOptions {
  /** Facts in the session (default 10,000): whole 20-step runs, then one run parked on a permission. */
  facts?: number;
  /** Measured repetitions, each on a newly opened store (default 7). */
  repetitions?: number;
}

/** Median milliseconds of each phase. */
export interface RehydrationResult {
  facts: number;
  runs: number;
  /** Facts of the unfinished run that `foldRun` replays. */
  openRunFacts: number;
  phases: { phase: string; ms: number }[];
}

const steps = 20;
const sessionId = 'session_1';

/**
 * Builds the session with the real runtime (memoryStore, then copied into a lowdbStore folder
 * fact for fact), and times rehydrating it from a cold store in `repetitions` rounds.
 */
export async function benchRehydration(
  options: RehydrationBenchOptions = {},
): Promise<RehydrationResult> {
  const target = options.facts ?? 10_000;
  const repetitions = options.repetitions ?? 7;
  const facts = await sessionOf(target);
  const dir = await mkdtemp(path.join(tmpdir(), 'turnlog-bench-rehydrate-'));
  try {
    const store = lowdbStore({ dir: path.join(dir, 'store') });
    for (let start = 0; start < facts.length; start += 500) {
      const batch = facts
        .slice(start, start + 500)
        .map(({ seq: _seq, ...fact }) => fact as NewFact);
      await store.append(sessionId, batch, { expectedSeq: start });
    }
    await store.close();

    const openRunId = facts.findLast((fact) => fact.type === 'run.started')?.runId ?? '';
    const samples: Record<string, number[]> = {};
    const record = (phase: string, ms: number) => {
      samples[phase] ??= [];
      samples[phase].push(ms);
    };
    for (let round = 0; round < repetitions + 1; round += 1) {
      const measured = round > 0; // the first round warms the code paths up
      const started = performance.now();
      let mark = started;
      const lap = (phase: string) => {
        const now = performance.now();
        if (measured) record(phase, now - mark);
        mark = now;
      };
      const cold = lowdbStore({ dir: path.join(dir, 'store') });
      lap('open the store (lock, folders)');
      const read = await cold.read(sessionId);
      lap(`read ${read.length} facts`);
      const folded = foldRun(read, openRunId);
      lap(`foldRun of the unfinished run (${folded.facts.length} facts)`);
      const history = projectHistory(read, { provider: 'bench' });
      lap(`projectHistory (${history.length} messages)`);
      const view = projectTurn(read);
      lap('projectTurn (read model)');
      const plan = planRecovery(read);
      lap('planRecovery');
      if (measured) record('total: open + read + fold + projections', performance.now() - started);
      await cold.close();
      if (!folded.snapshot.hasTag('needsPerson') || view.pending.length !== 1) {
        throw new Error(
          `rehydration: the open run is not parked (${String(folded.snapshot.value)})`,
        );
      }
      if (plan.runs.length !== 1) throw new Error('rehydration: expected one unfinished run');

      // Every run folded: what checking the whole session's recorded states costs.
      if (measured) {
        const runIds = [...new Set(read.map((fact) => fact.runId))];
        record(
          `foldRun of every run (${runIds.length} runs, ${read.length} facts)`,
          await timed(async () => {
            for (const runId of runIds) foldRun(read, runId);
          }),
        );
      }

      const copy = path.join(dir, `copy_${round}`);
      await cp(path.join(dir, 'store'), copy, { recursive: true });
      const recoverStarted = performance.now();
      const runtime = conversationRuntime({ store: lowdbStore({ dir: copy }), steps });
      const recovered = await runtime.recover();
      if (measured) record('createRuntime + recover() (cold)', performance.now() - recoverStarted);
      if (recovered.length !== 1 || recovered[0]?.status !== 'parked') {
        throw new Error(`rehydration: recover() found ${JSON.stringify(recovered)}`);
      }
      await runtime.close();
      await rm(copy, { recursive: true, force: true });
    }
    return {
      facts: facts.length,
      runs: new Set(facts.map((fact) => fact.runId)).size,
      openRunFacts: facts.filter((fact) => fact.runId === openRunId).length,
      phases: Object.entries(samples).map(([phase, values]) => ({ phase, ms: median(values) })),
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * A session of at least `target` facts: copies of one finished 20-step run (see
 * `finishedRuns`), then one run made by the real runtime on top of them, parked on a permission
 * at its last tool call.
 */
async function sessionOf(target: number): Promise<Fact[]> {
  const copies = await finishedRuns({ sessionId, steps, facts: target });
  const runtime = conversationRuntime({
    store: memoryStore({ facts: copies }),
    steps,
    permission: (input) => (input.a === steps - 2 ? 'ask' : 'allow'),
  });
  try {
    const turn = await runtime.send({ sessionId, text: conversationPrompt });
    for await (const event of turn.events) if (event.type === 'tool.permission.requested') break;
    return await runtime.facts(sessionId);
  } finally {
    await runtime.close();
  }
}

/** The phases as a table. */
export function rehydrationTable(result: RehydrationResult): BenchTable {
  return {
    title: `Rehydration of a ${result.facts.toLocaleString('en-US')}-fact session from a cold lowdbStore`,
    columns: ['phase', 'median'],
    rows: result.phases.map((phase) => [phase.phase, formatMs(phase.ms)]),
    notes: [
      `the session: ${result.runs - 1} finished 20-step runs (one made by the runtime, copied with fresh ids) and one run made by the runtime on top of them, parked in awaitingPermission at its last tool call (${result.openRunFacts} facts)`,
      '"cold": a new lowdbStore instance on the folder each round (the OS page cache is warm); the first round is a warm-up',
      'createRuntime + recover(): on a fresh copy of the folder each round; it folds the parked run, commits run.recovered and leaves it parked',
    ],
  };
}

if (import.meta.main) {
  const { formatTable } = await import('./table.ts');
  console.log(formatTable(rehydrationTable(await benchRehydration())));
}
