import type { Fact } from '../../events/facts.ts';
import type { EventStore } from '../../store/event-store.ts';
import {
  createTurnChannel,
  type TurnEvent,
  type TurnHandle,
  type TurnResult,
  type TurnSink,
  turnResult,
} from './turn-channel.ts';

/** The ids that name one run. */
export interface RunIds {
  sessionId: string;
  turnId: string;
  runId: string;
}

/**
 * The sinks of a run's handles (a run may have several: the caller of `send()`, then of
 * `recover()`), each taking each fact once, in `seq` order: a run followed through the store and
 * then driven here (or back) may bring a fact twice.
 */
export class RunSinks {
  // A linked list: most runs have one handle, and a parked run should cost little (bench/,
  // parked-memory).
  private readonly sink: TurnSink;
  private lastSeq: number;
  private next: RunSinks | undefined;

  constructor(sink: TurnSink, seen: readonly TurnEvent[]) {
    this.sink = sink;
    let lastSeq = 0;
    for (const event of seen) if ('seq' in event) lastSeq = Math.max(lastSeq, event.seq);
    this.lastSeq = lastSeq;
  }

  add(sink: TurnSink, seen: readonly TurnEvent[]) {
    const added = new RunSinks(sink, seen);
    added.next = this.next;
    this.next = added;
  }

  /** The lowest `seq` every handle has seen up to. */
  get seenUpTo(): number {
    return Math.min(this.lastSeq, this.next?.seenUpTo ?? Number.POSITIVE_INFINITY);
  }

  /** False when every handle had the fact already. */
  push(event: TurnEvent): boolean {
    let taken = false;
    if (!('seq' in event) || event.seq > this.lastSeq) {
      if ('seq' in event) this.lastSeq = event.seq;
      this.sink.push(event);
      taken = true;
    }
    return (this.next?.push(event) ?? false) || taken;
  }

  end(result: TurnResult) {
    this.sink.end(result);
    this.next?.end(result);
  }

  fail(error: unknown) {
    this.sink.fail(error);
    this.next?.fail(error);
  }
}

/**
 * The handles of the runtime's unfinished runs: the sinks it feeds (the caller's `done` and a
 * weak reference to each event buffer, all a parked run keeps). With `follows` (a worker), the
 * handles of a run not driven here follow it through the store until `run.ended`.
 */
export function createRunHandles(options: {
  store: EventStore;
  follows: boolean;
  onError: (error: unknown) => void;
}) {
  const { store } = options;
  const sinks = new Map<string, RunSinks>();
  // Per run not driven here whose handles follow it: the store subscription.
  const followers = new Map<string, () => void>();

  /** A new handle for a run; the runtime keeps only its sink. */
  function newHandle(ids: RunIds, seen: readonly TurnEvent[] = []): TurnHandle {
    const { handle, sink } = createTurnChannel(ids, seen);
    const run = sinks.get(ids.runId);
    if (run === undefined) sinks.set(ids.runId, new RunSinks(sink, seen));
    else run.add(sink, seen);
    return handle;
  }

  /**
   * A handle of a run not driven here follows it through the store: every fact of the run, in
   * order, until `run.ended` resolves its `done`.
   */
  function follow(ids: RunIds) {
    const sink = sinks.get(ids.runId);
    if (!options.follows || sink === undefined || followers.has(ids.runId)) return;
    // Facts the subscription brings before the catch-up read is in wait behind it.
    let waiting: Fact[] | undefined = [];
    const take = (fact: Fact) => {
      if (fact.runId !== ids.runId) return;
      if (waiting !== undefined) waiting.push(fact);
      else if (sink.push(fact) && fact.type === 'run.ended') void ended(ids, sink);
    };
    followers.set(ids.runId, store.subscribe(ids.sessionId, take));
    const flush = (read: readonly Fact[]) => {
      const later = waiting ?? [];
      waiting = undefined;
      for (const fact of [...read, ...later]) take(fact);
    };
    store.read(ids.sessionId, { fromSeq: sink.seenUpTo + 1 }).then(flush, (error) => {
      flush([]);
      options.onError(error);
    });
  }

  async function ended(ids: RunIds, sink: RunSinks) {
    stopFollowing(ids.runId);
    if (sinks.get(ids.runId) === sink) sinks.delete(ids.runId);
    try {
      sink.end(turnResult(await store.read(ids.sessionId), ids.runId));
    } catch (error) {
      sink.fail(error);
    }
  }

  function stopFollowing(runId: string) {
    followers.get(runId)?.();
    followers.delete(runId);
  }

  /** Forgets the run's handles without telling them (a run that never started, or told already). */
  function discard(runId: string) {
    sinks.delete(runId);
    stopFollowing(runId);
  }

  return {
    newHandle,

    /**
     * The sinks of a run about to be driven here, `facts` its session's log: following stops, and
     * the handles get what the log holds beyond what they saw (another worker's facts). A run
     * rebuilt without a handle (its caller went away) gets one nobody reads.
     */
    drivenHere(ids: RunIds, facts: readonly Fact[]): RunSinks {
      if (!sinks.has(ids.runId)) newHandle(ids);
      const sink = sinks.get(ids.runId) as RunSinks;
      if (options.follows) {
        stopFollowing(ids.runId);
        for (const fact of runFactsSince(facts, ids.runId, sink.seenUpTo)) sink.push(fact);
      }
      return sink;
    },

    follow,

    /** The run ended: its handles resolve, and the runtime forgets them. */
    end(runId: string, result: TurnResult) {
      sinks.get(runId)?.end(result);
      discard(runId);
    },

    /** The run's log could not be written: its handles reject. */
    fail(runId: string, error: unknown) {
      sinks.get(runId)?.fail(error);
      discard(runId);
    },

    discard,

    /** Fails every open handle with `error` (the runtime closed). */
    close(error: unknown) {
      for (const unsubscribe of followers.values()) unsubscribe();
      followers.clear();
      for (const sink of sinks.values()) sink.fail(error);
      sinks.clear();
    },
  };
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
