// Per-step cost as the session grows: the 20-step conversation as the next turn of a session that
// already holds N facts of finished runs, through turnlog (memoryStore) and through plain
// streamText given the same history as messages (what an app keeping its own history sends).
// Run alone: npx node bench/session-length.ts

import { toAiSdkMessages } from '../adapters/message-conversion.ts';
import type { Fact } from '../events/facts.ts';
import { projectHistory } from '../events/project-history.ts';
import type { Runtime } from '../runtime.ts';
import { memoryStore } from '../store/memory/memory-store.ts';
import { finishedRuns } from './long-session.ts';
import { interleave, median, sampleLists } from './stats.ts';
import { type BenchTable, formatMs } from './table.ts';
import { conversationRuntime, runStreamText, runTurnlog } from './turnlog-side.ts';

/** Medians per step for one session length. */
export interface SessionLengthRow {
  priorFacts: number;
  priorMessages: number;
  streamTextStepMs: number;
  turnlogStepMs: number;
  /** Median CPU time of the process per step, each side. */
  streamTextCpuStepMs: number;
  turnlogCpuStepMs: number;
  /** Measured rounds behind the medians. */
  rounds: number;
}

const steps = 20;
const warmup = 2;
const sessionId = 'session_1';

/** Measures a turn on top of sessions of each length, in interleaved rounds. */
export async function benchSessionLength(
  lengths: readonly number[] = [0, 1_000, 5_000, 10_000],
  rounds = 11,
): Promise<SessionLengthRow[]> {
  const rows: SessionLengthRow[] = [];
  for (const length of lengths) {
    const prior: Fact[] =
      length === 0 ? [] : await finishedRuns({ sessionId, steps, facts: length });
    const history = toAiSdkMessages(projectHistory(prior, { provider: 'bench' }));
    // One runtime per round, on a store seeded with the prior facts, made (and the previous one
    // closed) outside the timing: one copy of the session in memory at a time, as in a server.
    let runtime: Runtime | undefined;
    const cpu = sampleLists(['streamText', 'turnlog'] as const);
    const samples = await interleave({
      rounds,
      warmup,
      cpu,
      prepare: {
        turnlog: async () => {
          await runtime?.close();
          runtime = conversationRuntime({ store: memoryStore({ facts: prior }), steps });
        },
      },
      sides: {
        streamText: () => runStreamText(steps, history),
        turnlog: () => runTurnlog({ runtime: runtime as Runtime, sessionId, steps }),
      },
    });
    await runtime?.close();
    rows.push({
      priorFacts: prior.length,
      priorMessages: history.length,
      streamTextStepMs: median(samples.streamText) / steps,
      turnlogStepMs: median(samples.turnlog) / steps,
      streamTextCpuStepMs: median(cpu.streamText) / steps,
      turnlogCpuStepMs: median(cpu.turnlog) / steps,
      rounds,
    });
  }
  return rows;
}

/** The rows as a table, each length against the empty session (the target: ≤ 1.5×). */
export function sessionLengthTable(rows: SessionLengthRow[]): BenchTable {
  const [empty] = rows;
  const versusEmpty = (value: number, base: number | undefined) =>
    base === undefined ? '' : `${(value / base).toFixed(2)}×`;
  return {
    title: 'Per-step cost of a 20-step turn as the session grows (memoryStore)',
    columns: [
      'facts already in the session',
      'history messages',
      'streamText per step',
      'turnlog per step',
      'turnlog vs 0 facts',
      'streamText vs 0 facts',
      'turnlog CPU per step',
      'turnlog CPU vs 0 facts',
      'turnlog − streamText, CPU',
    ],
    rows: rows.map((row) => [
      row.priorFacts.toLocaleString('en-US'),
      row.priorMessages.toLocaleString('en-US'),
      formatMs(row.streamTextStepMs),
      formatMs(row.turnlogStepMs),
      versusEmpty(row.turnlogStepMs, empty?.turnlogStepMs),
      versusEmpty(row.streamTextStepMs, empty?.streamTextStepMs),
      formatMs(row.turnlogCpuStepMs),
      versusEmpty(row.turnlogCpuStepMs, empty?.turnlogCpuStepMs),
      formatMs(row.turnlogCpuStepMs - row.streamTextCpuStepMs),
    ]),
    notes: [
      'prior facts: copies of one finished 20-step run made by the runtime (fresh ids, seqs moved with each copy); streamText gets the same history, projected and converted to AI SDK messages, before the new user message',
      'turnlog projects the next request from the previous projection plus the facts since, hashes only the new messages, and reads the loop gate from the run; per run it reads the session from the store once and projects it once. The AI SDK converts the whole message list for every request (streamText too)',
      'target (issue 10): turnlog per step on top of 10,000 facts ≤ 1.5× per step on top of 0',
      `medians of ${rows[0]?.rounds ?? 0} interleaved rounds after ${warmup} warm-up rounds; each turnlog round runs on a new runtime over a memoryStore seeded with the prior facts, made (and the previous one closed) untimed just before it; CPU: the process's user + system time`,
    ],
  };
}

if (import.meta.main) {
  const { formatTable } = await import('./table.ts');
  console.log(formatTable(sessionLengthTable(await benchSessionLength())));
}
