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
  // parked-memory). The head object is the run's for its life (its driver and `FollowedRun`
  // hold it): removing a node keeps it (`remove`).
  private sink: TurnSink;
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

  /**
   * Unlinks the node of `sink`, keeping the head object: a removed head takes its next node's
   * fields; the only node keeps a sink that takes nothing (as a run driven with no reader has).
   * True when `sink` was there.
   */
  remove(sink: TurnSink): boolean {
    if (this.sink === sink) {
      const next = this.next;
      this.sink = next?.sink ?? nobody;
      this.lastSeq = next?.lastSeq ?? this.lastSeq;
      this.next = next?.next;
      return true;
    }
    for (let node: RunSinks = this; node.next !== undefined; node = node.next) {
      if (node.next.sink === sink) {
        node.next = node.next.next;
        return true;
      }
    }
    return false;
  }

  /** True once every handle was let go (`remove`): the sinks feed nobody. */
  get empty(): boolean {
    return this.sink === nobody && this.next === undefined;
  }

  /** How many sinks the run feeds (a test's view of what a run keeps). */
  get size(): number {
    return (this.sink === nobody ? 0 : 1) + (this.next?.size ?? 0);
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

/** The sink of a run whose handles were all let go. */
const nobody: TurnSink = { push() {}, end() {}, fail() {}, letGo() {} };

/**
 * The handles of the runtime's unfinished runs: the sinks it feeds (the caller's `done` and a
 * weak reference to each event buffer, all a parked run keeps), per run. A worker's handles of a
 * run driven elsewhere follow it through the store (`RunFollowers`, machines/effects/worker/).
 */
export class RunHandles {
  readonly #sinks = new Map<string, RunSinks>();
  readonly #onEmptied: (ids: RunIds, sinks: RunSinks) => void;

  /** `onEmptied`: the last handle of a run was let go (its `signal` aborted). */
  constructor(onEmptied: (ids: RunIds, sinks: RunSinks) => void = ignore) {
    this.#onEmptied = onEmptied;
  }

  /**
   * A new handle for a run; the runtime keeps only its sink. When `signal` aborts (or is
   * aborted already), the handle is let go: its sink leaves the run (`letGo`), its events end
   * and its `done` rejects with the signal's reason.
   */
  newHandle(ids: RunIds, seen: readonly TurnEvent[] = [], signal?: AbortSignal): TurnHandle {
    const { handle, sink } = createTurnChannel(ids, seen);
    const run = this.#sinks.get(ids.runId);
    if (run === undefined) this.#sinks.set(ids.runId, new RunSinks(sink, seen));
    else run.add(sink, seen);
    if (signal !== undefined) this.#letGoOnAbort({ ids, sink, signal, done: handle.done });
    return handle;
  }

  /** Lets the handle go when `signal` aborts; the listener goes once the run is over. */
  #letGoOnAbort({
    ids,
    sink,
    signal,
    done,
  }: {
    ids: RunIds;
    sink: TurnSink;
    signal: AbortSignal;
    done: Promise<TurnResult>;
  }): void {
    // Closes over the ids and the sink, never the handle: the runtime keeps this listener (through
    // the handle's `done`) while the run is unfinished, and must not keep the handle's events.
    const onAbort = () => this.letGo(ids, sink, signal.reason);
    if (signal.aborted) {
      onAbort();
      return;
    }
    signal.addEventListener('abort', onAbort, { once: true });
    const forget = () => signal.removeEventListener('abort', onAbort);
    done.then(forget, forget);
  }

  /**
   * Lets one handle go: its sink leaves the run, its events end, its `done` rejects with
   * `reason`; the run whose last handle this was is reported (`onEmptied`).
   */
  letGo(ids: RunIds, sink: TurnSink, reason: unknown): void {
    const run = this.#sinks.get(ids.runId);
    if (run === undefined || !run.remove(sink)) return;
    sink.letGo(reason);
    if (run.empty) this.#onEmptied(ids, run);
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

  /** How many runs the runtime keeps handles of. */
  get size(): number {
    return this.#sinks.size;
  }

  /** Fails every open handle with `error` (the runtime closed). */
  close(error: unknown): void {
    for (const sink of this.#sinks.values()) sink.fail(error);
    this.#sinks.clear();
  }
}

function ignore() {}
