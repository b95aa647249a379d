import type { EventStore, OpenRun } from '../../store/event-store.ts';
import type { TurnMachine } from '../pure/turn-machine.ts';
import { loadRun } from './load-run.ts';
import type { LoadedTenure, RunTenure } from './run-tenure.ts';

/**
 * The tenure of a runtime on a store for one process (memoryStore, lowdbStore): every run is its
 * own to drive, always. Nothing is claimed, stamped, followed or handed over.
 */
export class SingleProcessTenure implements RunTenure {
  readonly shared = false;
  readonly #store: EventStore;

  constructor(store: EventStore) {
    this.#store = store;
  }

  async claim(): Promise<void> {}

  runsToRecover(): Promise<OpenRun[]> {
    return this.#store.openRuns();
  }

  load(request: {
    machine: TurnMachine;
    sessionId: string;
    runId: string | undefined;
  }): Promise<LoadedTenure> {
    // Never elsewhere: nothing is claimed.
    return loadRun<never>({ store: this.#store, ...request });
  }

  token(): undefined {
    return undefined;
  }

  follow(): void {}

  unfollow(): void {}

  drive(): void {}

  /** A store for one process has no inbox: every request is done by its caller. */
  async takeUp(): Promise<boolean> {
    return false;
  }

  async leave(): Promise<void> {}

  supersede(): boolean {
    return false;
  }

  isLost(): boolean {
    return false;
  }

  warn(): void {}

  async close(): Promise<void> {}
}
