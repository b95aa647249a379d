import {
  createTurnChannel,
  type TurnEvent,
  type TurnHandle,
  type TurnResult,
  type TurnSink,
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
 * weak reference to each event buffer, all a parked run keeps), per run. A worker's handles of a
 * run driven elsewhere follow it through the store (`RunFollowers`, machines/effects/worker/).
 */
export class RunHandles {
  readonly #sinks = new Map<string, RunSinks>();

  /** A new handle for a run; the runtime keeps only its sink. */
  newHandle(ids: RunIds, seen: readonly TurnEvent[] = []): TurnHandle {
    const { handle, sink } = createTurnChannel(ids, seen);
    const run = this.#sinks.get(ids.runId);
    if (run === undefined) this.#sinks.set(ids.runId, new RunSinks(sink, seen));
    else run.add(sink, seen);
    return handle;
  }

  /** The sinks of the run's handles, if it has any. */
  sinksOf(runId: string): RunSinks | undefined {
    return this.#sinks.get(runId);
  }

  /**
   * The sinks of a run about to be driven here. A run rebuilt without a handle (its caller went
   * away) gets one nobody reads.
   */
  drivenHere(ids: RunIds): RunSinks {
    if (!this.#sinks.has(ids.runId)) this.newHandle(ids);
    return this.#sinks.get(ids.runId) as RunSinks;
  }

  /** The run ended: its handles resolve, and the runtime forgets them. */
  end(runId: string, result: TurnResult): void {
    this.#sinks.get(runId)?.end(result);
    this.#sinks.delete(runId);
  }

  /** The run's log could not be written: its handles reject. */
  fail(runId: string, error: unknown): void {
    this.#sinks.get(runId)?.fail(error);
    this.#sinks.delete(runId);
  }

  /**
   * Forgets the run's handles without telling them (a run that never started, or told already);
   * with `only`, only while they are still those sinks.
   */
  discard(runId: string, only?: RunSinks): void {
    if (only === undefined || this.#sinks.get(runId) === only) this.#sinks.delete(runId);
  }

  /** Fails every open handle with `error` (the runtime closed). */
  close(error: unknown): void {
    for (const sink of this.#sinks.values()) sink.fail(error);
    this.#sinks.clear();
  }
}
