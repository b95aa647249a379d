import type { Fact } from '../../events/facts.ts';
import { type EventStore, StoreCorruptionError, StoreError } from '../../store/event-store.ts';
import {
  type DamagedRun,
  damagedRun,
  type LoadedRun,
  resumeRun,
  unfinishedRun,
} from '../pure/resume-run.ts';
import type { TurnMachine } from '../pure/turn-machine.ts';

/**
 * Reads a session and rebuilds its unfinished run (`runId`, else its last one) for resuming
 * (`resumeRun`), or says why it cannot be resumed; a session the store cannot read
 * (`StoreCorruptionError`, or a `StoreError` naming this session) is damage too. Nothing is written. `undefined` when there is no such
 * unfinished run.
 *
 * With `claim` (a worker on a shared store), the run's lease is taken between reading the
 * session and rebuilding the run: `claim` answers `true` once this worker holds it, or what
 * stands in the way (returned as is). The facts appended before the lease changed hands are then
 * read too, so the run is rebuilt from everything its previous driver wrote.
 */
export async function loadRun<TElsewhere>({
  store,
  machine,
  sessionId,
  runId,
  claim,
}: {
  store: EventStore;
  machine: TurnMachine;
  sessionId: string;
  runId: string | undefined;
  claim?: (runId: string) => Promise<true | TElsewhere>;
}): Promise<LoadedRun | DamagedRun | { elsewhere: TElsewhere } | undefined> {
  let facts: Fact[];
  try {
    facts = await store.read(sessionId);
    if (claim !== undefined) {
      const target = runId ?? unfinishedRun(facts)?.runId;
      if (target === undefined) return undefined;
      const claimed = await claim(target);
      if (claimed !== true) return { elsewhere: claimed };
      const since = await store.read(sessionId, { fromSeq: (facts.at(-1)?.seq ?? 0) + 1 });
      for (const fact of since) facts.push(fact);
    }
  } catch (error) {
    // Damage, or a file of this session the store cannot read (EIO, EACCES, a folder where a
    // segment should be), is this session's alone: the others go on.
    const sessionOnly =
      StoreCorruptionError.isInstance(error) ||
      (StoreError.isInstance(error) && error.sessionId === sessionId);
    if (sessionOnly) return damagedRun(sessionId, runId, [error.message]);
    throw error;
  }
  return resumeRun(facts, sessionId, runId, machine);
}
