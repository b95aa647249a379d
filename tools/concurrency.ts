/** Limits how many tasks run at once per key (per run, for tool executions). */
export interface KeyedLimiter {
  /**
   * Waits for a free slot under `key` (at most `limit` held at once), then resolves with its
   * release function. Rejects with the signal's reason if `signal` aborts while waiting.
   */
  acquire(options: { key: string; limit: number; signal?: AbortSignal }): Promise<() => void>;
  /** Slots held under `key` right now. */
  active(key: string): number;
}

interface Lane {
  active: number;
  waiting: Array<() => void>;
}

/**
 * Makes a keyed limiter: a FIFO semaphore per key, dropped when its last slot is released.
 *
 * @example
 * const limiter = createKeyedLimiter();
 * const release = await limiter.acquire({ key: runId, limit: 4 });
 * try { await work(); } finally { release(); }
 */
export function createKeyedLimiter(): KeyedLimiter {
  const lanes = new Map<string, Lane>();

  function release(key: string, lane: Lane): void {
    const next = lane.waiting.shift();
    if (next !== undefined) {
      next();
      return;
    }
    lane.active -= 1;
    if (lane.active === 0) lanes.delete(key);
  }

  return {
    async acquire({ key, limit, signal }) {
      signal?.throwIfAborted();
      let lane = lanes.get(key);
      if (lane === undefined) {
        lane = { active: 0, waiting: [] };
        lanes.set(key, lane);
      }
      const current = lane;
      const releaseOnce = () => {
        let released = false;
        return () => {
          if (released) return;
          released = true;
          release(key, current);
        };
      };
      if (current.active < Math.max(1, limit)) {
        current.active += 1;
        return releaseOnce();
      }
      return new Promise<() => void>((resolve, reject) => {
        // A released slot passes straight to the next waiter: `active` stays the same.
        const grant = () => {
          signal?.removeEventListener('abort', onAbort);
          resolve(releaseOnce());
        };
        const onAbort = () => {
          const index = current.waiting.indexOf(grant);
          if (index !== -1) current.waiting.splice(index, 1);
          reject(signal?.reason);
        };
        current.waiting.push(grant);
        signal?.addEventListener('abort', onAbort, { once: true });
      });
    },
    active(key) {
      return lanes.get(key)?.active ?? 0;
    },
  };
}
