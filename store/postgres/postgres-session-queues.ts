/**
 * Work queued per session: each piece starts after the one queued before it for the same
 * session has settled, so a session's appends (or partial writes) run one at a time, in call
 * order. A session's entry is dropped once its queue is empty.
 */
export class SessionQueues {
  readonly #tails = new Map<string, Promise<void>>();

  /** Runs `work` after the work queued before it for the session; the queue never rejects. */
  run<T>(sessionId: string, work: () => Promise<T>): Promise<T> {
    const result = (this.#tails.get(sessionId) ?? Promise.resolve()).then(work);
    const tail = result.then(
      () => {},
      () => {},
    );
    this.#tails.set(sessionId, tail);
    tail.then(() => {
      if (this.#tails.get(sessionId) === tail) this.#tails.delete(sessionId);
    });
    return result;
  }

  /** Settles once the work queued so far for the session has; never rejects. */
  settled(sessionId: string): Promise<void> | undefined {
    return this.#tails.get(sessionId);
  }

  /** Settles once the work queued so far for every session has; never rejects. */
  async allSettled(): Promise<void> {
    await Promise.all(this.#tails.values());
  }
}
