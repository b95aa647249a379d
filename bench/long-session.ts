import type { Fact } from '../events/facts.ts';
import { memoryStore } from '../store/memory/memory-store.ts';
import { conversationRuntime, runTurnlog } from './turnlog-side.ts';

/**
 * A session's worth of finished runs: one run of the `steps`-step conversation made by the real
 * runtime, copied with fresh run, turn, step and fact ids until the next copy would pass `facts`
 * (at least one copy). Making each run with the runtime would take minutes, since turnlog's
 * per-step cost grows with the session (bench/session-length.ts).
 */
export async function finishedRuns(options: {
  sessionId: string;
  steps: number;
  facts: number;
}): Promise<Fact[]> {
  const { sessionId, steps } = options;
  const template = conversationRuntime({ store: memoryStore(), steps });
  await runTurnlog({ runtime: template, sessionId, steps });
  const run = await template.facts(sessionId);
  await template.close();

  const copies: Fact[] = [];
  for (
    let copy = 0;
    copies.length === 0 || copies.length + run.length <= options.facts;
    copy += 1
  ) {
    // Each copy sits `offset` facts later than the original: its seqs, and the seq each request
    // was projected through, move with it (so history places every copy after the one before).
    const offset = copies.length;
    for (const fact of renamed(run, `c${copy}`)) {
      const moved = { ...fact, seq: fact.seq + offset } as Fact;
      if (moved.type === 'step.started' && moved.projectedThroughSeq !== undefined) {
        moved.projectedThroughSeq += offset;
      }
      copies.push(moved);
    }
  }
  return copies;
}

/** The run's facts with every run, turn, step and fact id suffixed (ids stay unique). */
function renamed(facts: readonly Fact[], suffix: string): Fact[] {
  const ids = new Set<string>();
  for (const fact of facts) {
    ids.add(fact.runId);
    ids.add(fact.turnId);
    if ('stepId' in fact) ids.add(fact.stepId);
  }
  let json = JSON.stringify(facts);
  // Longest first, so an id that prefixes another is not replaced inside it.
  for (const id of [...ids].sort((left, right) => right.length - left.length)) {
    json = json.replaceAll(`"${id}`, `"${id}_${suffix}`);
  }
  return (JSON.parse(json) as Fact[]).map((fact) =>
    fact.id.endsWith(`_${suffix}`) || fact.id.includes(`_${suffix}:`)
      ? fact
      : { ...fact, id: `${fact.id}_${suffix}` },
  );
}
