import type { Fact } from '../../events/facts.ts';
import { type EventStore, StoreCorruptionError } from '../../store/event-store.ts';
import { type DamagedRun, damagedRun, type LoadedRun, resumeRun } from '../pure/resume-run.ts';
import type { TurnMachine } from '../pure/turn-machine.ts';

/**
 * Reads a session and rebuilds its unfinished run (`runId`, else its last one) for resuming
 * (`resumeRun`), or says why it cannot be resumed; a session the store cannot read
 * (`StoreCorruptionError`) is damage too. Nothing is written. `undefined` when there is no such
 * unfinished run.
 */
export async function loadRun({
  store,
  machine,
  sessionId,
  runId,
}: {
  store: EventStore;
  machine: TurnMachine;
  sessionId: string;
  runId: string | undefined;
}): Promise<LoadedRun | DamagedRun | undefined> {
  let facts: Fact[];
  try {
    facts = await store.read(sessionId);
  } catch (error) {
    if (StoreCorruptionError.isInstance(error))
      return damagedRun(sessionId, runId, [error.message]);
    throw error;
  }
  return resumeRun(facts, sessionId, runId, machine);
}
