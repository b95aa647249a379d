import type { Fact } from '../../../events/facts.ts';
import type { EventStore } from '../../../store/event-store.ts';
import type { RunIds, RunSinks } from '../run-handles.ts';
import type { TenureHost } from '../run-tenure.ts';
import { turnResult } from '../turn-channel.ts';

/** One run followed through the store: its handles' sinks, and its store subscription. */
class FollowedRun {
  readonly ids: RunIds;
  readonly sinks: RunSinks;
  // Facts the subscription brings before the catch-up read is in wait behind it.
  waiting: Fact[] | undefined = [];
  unsubscribe: () => void = ignore;

  constructor(ids: RunIds, sinks: RunSinks) {
    this.ids = ids;
    this.sinks = sinks;
  }
}

/**
 * A worker's handles of the runs it does not drive (parked, lost, taken over by another worker)
 * follow each run through `store.subscribe`, after a catch-up read from the last `seq` they saw:
 * every fact of the run, in order, until `run.ended` resolves their `done`. A run that comes back
 * here first hands them what the log holds beyond it (`drivenHere`).
 */
export class RunFollowers {
  readonly #store: EventStore;
  readonly #runs: () => TenureHost;
  readonly #onError: (error: unknown) => void;
  // Per run followed.
  readonly #followed = new Map<string, FollowedRun>();

  constructor(options: {
    store: EventStore;
    /** The live runs, whose handles follow (read when a run is followed). */
    runs: () => TenureHost;
    onError: (error: unknown) => void;
  }) {
    this.#store = options.store;
    this.#runs = options.runs;
    this.#onError = options.onError;
  }

  /** The run's handles (if it has any) follow it through the store until `run.ended`. */
  follow(ids: RunIds): void {
    const sinks = this.#runs().handles.sinksOf(ids.runId);
    if (sinks === undefined) return;
    const following = this.#followed.get(ids.runId);
    if (following !== undefined) {
      // A handle opened since (runtime.follow()) catches up from the log: facts it has not seen
      // may have reached the other handles before it was added.
      this.#store.read(ids.sessionId, { fromSeq: sinks.seenUpTo + 1 }).then(
        (read) => this.#catchUp(following, read),
        (error) => this.#onError(error),
      );
      return;
    }
    const followed = new FollowedRun(ids, sinks);
    this.#followed.set(ids.runId, followed);
    followed.unsubscribe = this.#store.subscribe(ids.sessionId, (fact) =>
      this.#take(followed, fact),
    );
    this.#store.read(ids.sessionId, { fromSeq: sinks.seenUpTo + 1 }).then(
      (read) => this.#catchUp(followed, read),
      (error) => {
        this.#catchUp(followed, []);
        this.#onError(error);
      },
    );
  }

  /**
   * The run is about to be driven here, `facts` its session's log: following stops, and its
   * handles get what the log holds beyond what they saw (another worker's facts).
   */
  drivenHere(ids: RunIds, facts: readonly Fact[]): void {
    this.stop(ids.runId);
    const sinks = this.#runs().handles.sinksOf(ids.runId);
    if (sinks === undefined) return;
    for (const fact of runFactsSince(facts, ids.runId, sinks.seenUpTo)) sinks.push(fact);
  }

  /** Stops following the run. */
  stop(runId: string): void {
    this.#followed.get(runId)?.unsubscribe();
    this.#followed.delete(runId);
  }

  /** Stops following every run (the runtime closes: the handles are failed by their owner). */
  close(): void {
    for (const followed of this.#followed.values()) followed.unsubscribe();
    this.#followed.clear();
  }

  #take(followed: FollowedRun, fact: Fact): void {
    if (fact.runId !== followed.ids.runId) return;
    if (followed.waiting !== undefined) followed.waiting.push(fact);
    else if (followed.sinks.push(fact) && fact.type === 'run.ended') void this.#ended(followed);
  }

  /** The catch-up read is in: its facts, then the ones that waited behind it. */
  #catchUp(followed: FollowedRun, read: readonly Fact[]): void {
    const later = followed.waiting ?? [];
    followed.waiting = undefined;
    // In seq order: a later handle's catch-up may read from before what waited (each handle
    // takes each fact once, in order, and skips what it saw).
    const facts = [...read, ...later].sort((left, right) => left.seq - right.seq);
    for (const fact of facts) this.#take(followed, fact);
  }

  async #ended({ ids, sinks }: FollowedRun): Promise<void> {
    this.stop(ids.runId);
    this.#runs().handles.discard(ids.runId, sinks);
    try {
      sinks.end(turnResult(await this.#store.read(ids.sessionId), ids.runId));
    } catch (error) {
      sinks.fail(error);
    }
  }
}

/** The run's facts after `seq`, read back from the end of the session's facts. */
function runFactsSince(facts: readonly Fact[], runId: string, seq: number): Fact[] {
  const since: Fact[] = [];
  for (let index = facts.length - 1; index >= 0; index -= 1) {
    const fact = facts[index] as Fact;
    if (fact.seq <= seq) break;
    if (fact.runId === runId) since.push(fact);
  }
  return since.reverse();
}

function ignore() {}
