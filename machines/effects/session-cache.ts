import type { Fact } from '../../events/facts.ts';
import { createHistoryProjection, type HistoryProjection } from '../../events/project-history.ts';
import type { EventStore } from '../../store/event-store.ts';

/** How many sessions whose last run ended a runtime keeps the log and history of (default). */
export const defaultCachedSessions = 64;

interface Entry {
  /** The session's facts as its last run's driver left them (the store's own, read-only). */
  facts: readonly Fact[];
  /** That run's history projection, which the next run of the session goes on from. */
  history: HistoryProjection;
}

/**
 * The runtime's cache of sessions whose last run ended, keyed by session and `seq`: the log the
 * run's driver held and the run's history projection. The next `send()` on the session reads
 * from the store only the facts from the last cached `seq` on (the last cached fact must come
 * back first, same id, or the session is read in full) and its first request goes on from the
 * previous run's projection instead of projecting the whole session again (the projection checks
 * that the log starts with the very facts it read; anything else projects in full). Bounded: past
 * `capacity` sessions, the least recently used is dropped.
 */
export class SessionCache {
  readonly #capacity: number;
  // Least recently used first.
  readonly #entries = new Map<string, Entry>();

  constructor(capacity = defaultCachedSessions) {
    this.#capacity = capacity;
  }

  /**
   * The session's facts, the cached ones and the store's since; `undefined` when nothing is
   * cached or the store does not go on from the cached log (the caller reads it in full).
   */
  async facts(store: EventStore, sessionId: string): Promise<Fact[] | undefined> {
    const entry = this.#entries.get(sessionId);
    const last = entry?.facts.at(-1);
    if (entry === undefined || last === undefined) return undefined;
    const since = await store.read(sessionId, { fromSeq: last.seq });
    const [again] = since;
    if (again?.id !== last.id || again.seq !== last.seq) {
      this.#entries.delete(sessionId);
      return undefined;
    }
    const facts = [...entry.facts];
    for (let index = 1; index < since.length; index += 1) facts.push(since[index] as Fact);
    // Most recently used last.
    this.#entries.delete(sessionId);
    this.#entries.set(sessionId, { facts, history: entry.history });
    return facts;
  }

  /** The projection a new run of the session starts from (it checks the facts it is given). */
  history(sessionId: string): HistoryProjection {
    return this.#entries.get(sessionId)?.history ?? createHistoryProjection();
  }

  /** Keeps what a run that ended leaves: its log and its history projection. */
  keep(sessionId: string, facts: readonly Fact[], history: HistoryProjection): void {
    this.#entries.delete(sessionId);
    this.#entries.set(sessionId, { facts, history });
    for (const oldest of this.#entries.keys()) {
      if (this.#entries.size <= this.#capacity) break;
      this.#entries.delete(oldest);
    }
  }

  /** Forgets a session (its run failed: nothing unexpected is kept). */
  drop(sessionId: string): void {
    this.#entries.delete(sessionId);
  }

  get size(): number {
    return this.#entries.size;
  }
}
