// Per-step cost as the session grows: the 20-step conversation as the next turn of a session that
// already holds N facts of finished runs, through turnlog (memoryStore) and through plain
// streamText given the same history as messages (what an app keeping its own history sends).
// Run alone: npx node bench/session-length.ts

import { toAiSdkMessages } from '../adapters/message-conversion.ts';
import type { Fact } from '../events/facts.ts';
import { projectHistory } from '../events/project-history.ts';
import type { Runtime } from '../runtime.ts';
import { memoryStore } from '../store/memory-store.ts';
import { finishedRuns } from './long-session.ts';
import { interleave, median } from './stats.ts';
import { type BenchTable, formatMs } from './table.ts';
import { conversationRuntime, runStreamText, runTurnlog } from './turnlog-side.ts';

/** Medians per step for one session length. */
export interface SessionLengthRow {
  priorFacts: number;
  priorMessages: number;
  streamTextStepMs: number;
  turnlogStepMs: number;
  /** Measured rounds behind the medians. */
  rounds: number;
}

const steps = 20;
const warmup = 2;
const sessionId = 'session_1';

/** Measures a turn on top of sessions of each length, in interleaved rounds. */
export async function benchSessionLength(
  lengths: readonly number[] = [0, 1_000, 5_000, 10_000],
  rounds = 7,
): Promise<SessionLengthRow[]> {
  const rows: SessionLengthRow[] = [];
  for (const length of lengths) {
    const prior: Fact[] =
      length === 0 ? [] : await finishedRuns({ sessionId, steps, facts: length });
    const history = toAiSdkMessages(projectHistory(prior, { provider: 'bench' }));
    // One runtime per round, on a store seeded with the same prior facts (made outside the timing).
    const runtimes = Array.from({ length: rounds + warmup }, () =>
      conversationRuntime({ store: memoryStore({ facts: prior }), steps }),
    );
    const samples = await interleave({
      rounds,
      warmup,
      sides: {
        streamText: () => runStreamText(steps, history),
        turnlog: () => runTurnlog({ runtime: runtimes.pop() as Runtime, sessionId, steps }),
      },
    });
    rows.push({
      priorFacts: prior.length,
      priorMessages: history.length,
      streamTextStepMs: median(samples.streamText) / steps,
      turnlogStepMs: median(samples.turnlog) / steps,
      rounds,
    });
  }
  return rows;
}

/** The rows as a table. */
export function sessionLengthTable(rows: SessionLengthRow[]): BenchTable {
  return {
    title: 'Per-step cost of a 20-step turn as the session grows (memoryStore)',
    columns: [
      'facts already in the session',
      'history messages',
      'streamText per step',
      'turnlog per step',
      'ratio',
    ],
    rows: rows.map((row) => [
      row.priorFacts.toLocaleString('en-US'),
      row.priorMessages.toLocaleString('en-US'),
      formatMs(row.streamTextStepMs),
      formatMs(row.turnlogStepMs),
      `${(row.turnlogStepMs / row.streamTextStepMs).toFixed(2)}×`,
    ]),
    notes: [
      'prior facts: copies of one finished 20-step run made by the runtime (fresh ids per copy); streamText gets the same history, projected and converted to AI SDK messages, before the new user message',
      'turnlog re-projects the whole session and hashes the whole request (twice) for every step; streamText converts the whole message list for every step',
      `medians of ${rows[0]?.rounds ?? 0} interleaved rounds after ${warmup} warm-up rounds; each turnlog round runs on a new runtime over a memoryStore seeded with the prior facts (made before the timing)`,
    ],
  };
}

if (import.meta.main) {
  const { formatTable } = await import('./table.ts');
  console.log(formatTable(sessionLengthTable(await benchSessionLength())));
}
