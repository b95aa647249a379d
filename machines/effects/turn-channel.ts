import type { Fact, RunStatus, TransientEvent, Usage } from '../../events/facts.ts';
import { projectTurn } from '../../events/project-turn.ts';
import type { Reason } from '../pure/turn-context.ts';

/** What `turn.events` yields: the run's facts and its transient deltas, in order. */
export type TurnEvent = Fact | TransientEvent;

/** How a run ended, as `turn.done` reports it. */
export interface TurnResult {
  status: RunStatus;
  /** Why the run ended (see `Reason`). */
  reason: Reason;
  /** The text of the run's last completed step: the answer. */
  text: string;
  /** Usage summed over the run's completed steps; a number no step reported stays `undefined`. */
  usage: Usage;
  /** Completed provider steps. */
  steps: number;
  error?: { message: string };
}

/** One run as the caller of `send()` (or `recover()`) holds it. */
export interface TurnHandle {
  sessionId: string;
  turnId: string;
  runId: string;
  /**
   * The run's facts from `run.started`, then live, with deltas; ends after `run.ended`. Each
   * iteration starts from the beginning of what this handle has seen. A reader that is caught
   * up gets every delta as it came; deltas of one stream (a step's text or reasoning, a call's
   * input) that it has not reached yet may arrive folded into one, so the handle holds a
   * bounded number of events however long the run streams (issue 29).
   */
  events: AsyncIterable<TurnEvent>;
  /** Resolves when the run ends; rejects only if the log could not be written. */
  done: Promise<TurnResult>;
}

/** The `done` payload of a run, projected from the session's facts. */
export function turnResult(facts: readonly Fact[], runId: string): TurnResult {
  // The run's own facts, read back from its end: a run's view depends on nothing else, and a
  // long session's earlier runs would make every run's end cost more.
  const first = facts.findLastIndex((fact) => fact.type === 'run.started' && fact.runId === runId);
  const runFacts = facts.slice(Math.max(first, 0)).filter((fact) => fact.runId === runId);
  const run = projectTurn(runFacts).runs.find((candidate) => candidate.runId === runId);
  const ended = runFacts.findLast((fact) => fact.type === 'run.ended');
  if (run === undefined || ended?.type !== 'run.ended') {
    throw new Error(`turn result: run ${runId} has not ended`);
  }
  return {
    status: ended.status,
    // Every reason turnlog records is a `Reason` (run.ended stores it as text).
    reason: ended.reason as Reason,
    text: run.text,
    usage: run.usage,
    steps: run.steps.filter((step) => step.status === 'completed').length,
    ...(ended.error === undefined ? {} : { error: { message: ended.error.message } }),
  };
}

/**
 * The runtime's side of a `TurnHandle`. The runtime keeps only this small record per unfinished
 * run (a parked run costs little): the `done` resolvers and a weak reference to the handle's
 * event buffer, which lives as long as the caller keeps the handle.
 */
export interface TurnSink {
  push(event: TurnEvent): void;
  end(result: TurnResult): void;
  fail(error: unknown): void;
  /** The handle was let go (`follow`'s signal aborted): its events end, its `done` rejects with `reason`. */
  letGo(reason: unknown): void;
}

/** A handle for the caller and the sink the runtime feeds it through. */
export function createTurnChannel(
  ids: { sessionId: string; turnId: string; runId: string },
  seen: readonly TurnEvent[] = [],
): { handle: TurnHandle; sink: TurnSink } {
  const buffer = new EventBuffer(seen);
  let resolve!: (result: TurnResult) => void;
  let reject!: (error: unknown) => void;
  const done = new Promise<TurnResult>((onResolve, onReject) => {
    resolve = onResolve;
    reject = onReject;
  });
  // A caller that never awaits `done` must not get an unhandled rejection. (`ignore` is declared
  // outside this scope: a closure created here would keep `buffer` alive through `done`.)
  done.catch(ignore);
  const handle: TurnHandle = {
    ...ids,
    done,
    events: { [Symbol.asyncIterator]: () => buffer.iterate() },
  };
  return { handle, sink: createSink(new WeakRef(buffer), resolve, reject) };
}

function ignore() {}

/**
 * Built apart from the channel: it must not capture `buffer` itself, or the runtime would keep
 * every handle's events alive through the sink. A class, not three closures: a parked run keeps
 * its sink, so each byte counts a hundred thousand times (bench/, parked-memory).
 */
class ChannelSink implements TurnSink {
  private readonly bufferRef: WeakRef<EventBuffer>;
  private readonly resolve: (result: TurnResult) => void;
  private readonly reject: (error: unknown) => void;

  constructor(
    bufferRef: WeakRef<EventBuffer>,
    resolve: (result: TurnResult) => void,
    reject: (error: unknown) => void,
  ) {
    this.bufferRef = bufferRef;
    this.resolve = resolve;
    this.reject = reject;
  }

  push(event: TurnEvent) {
    this.bufferRef.deref()?.push(event);
  }

  end(result: TurnResult) {
    this.bufferRef.deref()?.close();
    this.resolve(result);
  }

  fail(error: unknown) {
    this.bufferRef.deref()?.close(error);
    this.reject(error);
  }

  letGo(reason: unknown) {
    this.bufferRef.deref()?.close();
    this.reject(reason);
  }
}

function createSink(
  bufferRef: WeakRef<EventBuffer>,
  resolve: (result: TurnResult) => void,
  reject: (error: unknown) => void,
): TurnSink {
  return new ChannelSink(bufferRef, resolve, reject);
}

// A reader waiting for the next event is reachable only through its buffer, which the runtime
// holds weakly: while a reader waits, its buffer is held here, or a GC would drop the reader
// mid-run and its `for await` would never resume.
const awaited = new Set<EventBuffer>();

/** One event of a buffer, in a list that readers walk. */
interface Entry {
  event: TurnEvent;
  prev: Entry | undefined;
  next: Entry | undefined;
  /** Readers whose last event read is this one (it may not change under them). */
  readers: number;
}

/**
 * Two deltas of one stream (one step's text or reasoning, one call's input) as one, or
 * `undefined` when they are not of one stream.
 */
export function mergedDelta(first: TurnEvent, second: TurnEvent): TurnEvent | undefined {
  if (first.runId !== second.runId || !('stepId' in first) || !('stepId' in second)) {
    return undefined;
  }
  if (first.stepId !== second.stepId) return undefined;
  if (
    (first.type === 'text.delta' && second.type === 'text.delta') ||
    (first.type === 'reasoning.delta' && second.type === 'reasoning.delta')
  ) {
    return { ...first, text: first.text + second.text };
  }
  if (
    first.type === 'tool.input.delta' &&
    second.type === 'tool.input.delta' &&
    first.callId === second.callId
  ) {
    return { ...first, delta: first.delta + second.delta };
  }
  return undefined;
}

/**
 * The events of one run, which any number of async iterators read from the start. Bounded
 * (issue 29, item 5): consecutive deltas of one stream are folded into one event as soon as no
 * reader stands between them, so a replay holds the run's facts and one delta per stream
 * (plus at most one per reader that stopped midway), not one per token. A reader that is
 * caught up still gets every delta as it came.
 */
class EventBuffer {
  private head: Entry | undefined;
  private tail: Entry | undefined;
  private closed = false;
  private error: unknown;
  private waiters: (() => void)[] = [];

  constructor(events: readonly TurnEvent[]) {
    for (const event of events) this.append(event);
  }

  push(event: TurnEvent) {
    if (this.closed) return;
    this.append(event);
    this.wake();
  }

  close(error?: unknown) {
    this.closed = true;
    this.error = error;
    this.wake();
  }

  private append(event: TurnEvent) {
    const entry: Entry = { event, prev: this.tail, next: undefined, readers: 0 };
    if (this.tail === undefined) this.head = entry;
    else this.tail.next = entry;
    this.tail = entry;
    if (entry.prev !== undefined) this.foldForward(entry.prev);
  }

  /**
   * Folds `entry` into the one after it when no reader stands on it and both are deltas of one
   * stream. Readers before it then read the merged delta; readers after it read on unchanged.
   */
  private foldForward(entry: Entry) {
    const next = entry.next;
    if (next === undefined || entry.readers > 0) return;
    const merged = mergedDelta(entry.event, next.event);
    if (merged === undefined) return;
    next.event = merged;
    next.prev = entry.prev;
    if (entry.prev === undefined) this.head = next;
    else entry.prev.next = next;
  }

  private wake() {
    const waiters = this.waiters;
    this.waiters = [];
    awaited.delete(this);
    for (const waiter of waiters) waiter();
  }

  /** Moves a reader from `from` (its last event read, if any) onto `to`. */
  private step(from: Entry | undefined, to: Entry) {
    to.readers += 1;
    if (from === undefined) return;
    from.readers -= 1;
    this.foldForward(from);
  }

  private leave(last: Entry | undefined) {
    if (last === undefined) return;
    last.readers -= 1;
    this.foldForward(last);
  }

  async *iterate(): AsyncGenerator<TurnEvent> {
    let last: Entry | undefined;
    try {
      while (true) {
        const next = last === undefined ? this.head : last.next;
        if (next !== undefined) {
          // Read before stepping: leaving `last` may fold it into `next`, which this reader
          // has read in part already.
          const event = next.event;
          this.step(last, next);
          last = next;
          yield event;
          continue;
        }
        if (this.closed) {
          if (this.error !== undefined) throw this.error;
          return;
        }
        awaited.add(this);
        await new Promise<void>((wake) => this.waiters.push(wake));
      }
    } finally {
      this.leave(last);
    }
  }
}
