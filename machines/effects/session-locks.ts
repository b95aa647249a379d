/**
 * The per-session lock: work on one session runs one piece at a time, in the order it was
 * asked for; work on different sessions runs concurrently. Once closed, new work is refused
 * with `closedError()`; `close()` resolves when the work already queued has finished.
 */
export class SessionLocks {
  readonly #closedError: () => Error;
  // Per session with work queued: the end of its queue.
  readonly #tails = new Map<string, Promise<unknown>>();
  #closed = false;

  constructor(closedError: () => Error) {
    this.#closedError = closedError;
  }

  /** Runs `work` once every earlier piece of work on `sessionId` has finished. */
  withSession<T>(sessionId: string, work: () => Promise<T>): Promise<T> {
    if (this.#closed) return Promise.reject(this.#closedError());
    const previous = this.#tails.get(sessionId) ?? Promise.resolve();
    const result = previous.then(work, work);
    const tail = result.catch(() => {});
    this.#tails.set(sessionId, tail);
    tail.then(() => {
      if (this.#tails.get(sessionId) === tail) this.#tails.delete(sessionId);
    });
    return result;
  }

  /** True once `close()` was called. */
  get closed(): boolean {
    return this.#closed;
  }

  /** Refuses new work; resolves when the queued work has finished. */
  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all([...this.#tails.values()]);
  }
}
