/**
 * The per-session lock: work on one session runs one piece at a time, in the order it was
 * asked for; work on different sessions runs concurrently. Once closed, new work is refused
 * with `closedError()`; `close()` resolves when the work already queued has finished.
 */
export function createSessionLocks(closedError: () => Error) {
  const locks = new Map<string, Promise<unknown>>();
  let closed = false;

  return {
    /** Runs `work` once every earlier piece of work on `sessionId` has finished. */
    withSession<T>(sessionId: string, work: () => Promise<T>): Promise<T> {
      if (closed) return Promise.reject(closedError());
      const previous = locks.get(sessionId) ?? Promise.resolve();
      const result = previous.then(work, work);
      const tail = result.catch(() => {});
      locks.set(sessionId, tail);
      tail.then(() => {
        if (locks.get(sessionId) === tail) locks.delete(sessionId);
      });
      return result;
    },

    /** True once `close()` was called. */
    get closed() {
      return closed;
    },

    /** Refuses new work; resolves when the queued work has finished. */
    async close(): Promise<void> {
      closed = true;
      await Promise.all([...locks.values()]);
    },
  };
}

/** A runtime's per-session lock. */
export type SessionLocks = ReturnType<typeof createSessionLocks>;
