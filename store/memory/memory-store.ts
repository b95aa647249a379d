import type { Fact, NewFact, PartialSnapshot } from '../../events/facts.ts';
import { boundPartial, defaultPartialChars } from '../bound-partial.ts';
import {
  type AppendOptions,
  type AppendResult,
  type EventStore,
  type OpenRun,
  StoreClosedError,
  type StoreFinding,
  StoreInputError,
} from '../event-store.ts';
import { FactListeners, type ListenerErrorHandler } from '../fact-listeners.ts';
import { cloneJson, copyPlainJson } from '../plain-json.ts';
import { checkEndedBefore, endedSessionOf, importedLog } from '../retention/ended-session.ts';
import { checkFromSeq, checkSessionId, SessionLog, storedFactProblem } from '../session-log.ts';
import type {
  EndedSession,
  RemovedSession,
  SessionRetention,
  SessionToRemove,
} from '../session-retention.ts';

/** Options of `memoryStore`. */
export interface MemoryStoreOptions {
  /**
   * Facts the store starts with (for replay tests), any sessions mixed. They keep their `seq`,
   * which must run 1, 2, 3, … without a gap in each session.
   */
  facts?: readonly Fact[];
  /** Bound of a partial snapshot's `text` and `reasoning`, in characters (default 16 KiB). */
  partialChars?: number;
  /** Called when a subscriber throws (default: a process warning). */
  onListenerError?: ListenerErrorHandler;
}

/**
 * An `EventStore` in memory, for tests and examples: the same rules as the durable store
 * (`seq`, `expectedSeq`, idempotent ids, sealed runs, validation), nothing survives the process.
 *
 * @example
 * const store = memoryStore({ facts: recordedFacts });
 * const facts = await store.read('session_1');
 */
export function memoryStore(options: MemoryStoreOptions = {}): EventStore & SessionRetention {
  return new MemoryStore(options);
}

class MemoryStore implements EventStore, SessionRetention {
  readonly #sessions = new Map<string, SessionLog>();
  readonly #partials = new Map<string, PartialSnapshot>();
  readonly #listeners: FactListeners;
  readonly #partialChars: number;
  #closed = false;

  constructor(options: MemoryStoreOptions) {
    this.#listeners = new FactListeners({ onListenerError: options.onListenerError });
    this.#partialChars = options.partialChars ?? defaultPartialChars;
    this.#seed(options.facts ?? []);
  }

  async append(
    sessionId: string,
    facts: readonly NewFact[],
    options?: AppendOptions,
  ): Promise<AppendResult> {
    this.#checkOpen('append');
    checkSessionId(sessionId, 'memoryStore.append');
    const log = this.#session(sessionId);
    const appended = log.append(facts, options);
    if (appended.length > 0 && !this.#sessions.has(sessionId)) this.#sessions.set(sessionId, log);
    this.#listeners.publish(sessionId, appended);
    return { appended: appended.map(cloneJson), lastSeq: log.lastSeq };
  }

  async read(sessionId: string, options: { fromSeq?: number } = {}): Promise<Fact[]> {
    this.#checkOpen('read');
    checkSessionId(sessionId, 'memoryStore.read');
    checkFromSeq(options.fromSeq, `memoryStore.read('${sessionId}')`);
    return this.#sessions.get(sessionId)?.read(options.fromSeq) ?? [];
  }

  subscribe(sessionId: string, listener: (fact: Fact) => void): () => void {
    this.#checkOpen('subscribe');
    checkSessionId(sessionId, 'memoryStore.subscribe');
    return this.#listeners.add(sessionId, listener);
  }

  async openRuns(): Promise<OpenRun[]> {
    this.#checkOpen('openRuns');
    return [...this.#sessions.keys()]
      .sort()
      .flatMap((sessionId) => this.#sessions.get(sessionId)?.openRuns() ?? []);
  }

  async findings(): Promise<StoreFinding[]> {
    this.#checkOpen('findings');
    // Seeds are checked when the store is made (a bad one throws): nothing is ever cut here.
    return [];
  }

  async sessions(): Promise<string[]> {
    this.#checkOpen('sessions');
    return [...this.#sessions.keys()].sort();
  }

  async savePartial(sessionId: string, partial: PartialSnapshot): Promise<void> {
    this.#checkOpen('savePartial');
    checkSessionId(sessionId, 'memoryStore.savePartial');
    const where = 'memoryStore.savePartial';
    this.#partials.set(
      sessionId,
      boundPartial(partial, { maxChars: this.#partialChars, where, sessionId }),
    );
  }

  async loadPartial(sessionId: string): Promise<PartialSnapshot | undefined> {
    this.#checkOpen('loadPartial');
    checkSessionId(sessionId, 'memoryStore.loadPartial');
    const partial = this.#partials.get(sessionId);
    return partial === undefined ? undefined : { ...partial };
  }

  async clearPartial(sessionId: string): Promise<void> {
    this.#checkOpen('clearPartial');
    checkSessionId(sessionId, 'memoryStore.clearPartial');
    this.#partials.delete(sessionId);
  }

  async endedSessions(options: { endedBefore: Date }): Promise<EndedSession[]> {
    this.#checkOpen('endedSessions');
    checkEndedBefore(options?.endedBefore, 'memoryStore.endedSessions');
    return [...this.#sessions.values()]
      .map((log) =>
        endedSessionOf({
          sessionId: log.sessionId,
          lastSeq: log.lastSeq,
          openRuns: log.openRuns().length,
          lastFact: log.slice(log.lastSeq, log.lastSeq)[0],
          endedBefore: options.endedBefore,
        }),
      )
      .filter((session) => session !== undefined)
      .sort((left, right) => (left.sessionId < right.sessionId ? -1 : 1));
  }

  async removeSessions(sessions: readonly SessionToRemove[]): Promise<RemovedSession[]> {
    this.#checkOpen('removeSessions');
    return sessions.map(({ sessionId, lastSeq }) => {
      const log = this.#sessions.get(sessionId);
      if (log === undefined) return { sessionId, outcome: 'absent' };
      if (log.lastSeq !== lastSeq || log.openRuns().length > 0) {
        return { sessionId, outcome: 'changed' };
      }
      this.#sessions.delete(sessionId);
      this.#partials.delete(sessionId);
      return { sessionId, outcome: 'removed' };
    });
  }

  async importFacts(sessionId: string, facts: readonly Fact[]): Promise<'imported' | 'exists'> {
    this.#checkOpen('importFacts');
    checkSessionId(sessionId, 'memoryStore.importFacts');
    if (this.#sessions.has(sessionId)) return 'exists';
    const log = importedLog({ sessionId, facts, storeName: 'memoryStore' });
    this.#sessions.set(sessionId, log);
    this.#listeners.publish(sessionId, log.read());
    return 'imported';
  }

  async close(): Promise<void> {
    // Closing twice is harmless; every other call after close throws StoreClosedError.
    this.#closed = true;
    this.#listeners.clear();
  }

  #session(sessionId: string): SessionLog {
    // A session exists once it has a fact: a rejected first append leaves no trace.
    return this.#sessions.get(sessionId) ?? new SessionLog({ sessionId, storeName: 'memoryStore' });
  }

  #checkOpen(method: string): void {
    if (this.#closed) {
      throw new StoreClosedError({
        message: `memoryStore.${method}: the store is closed; create a new store to go on`,
      });
    }
  }

  #seed(facts: readonly Fact[]): void {
    const bySession = new Map<string, Fact[]>();
    for (const [index, fact] of facts.entries()) {
      const copy = copyPlainJson(fact);
      const sessionId = (fact as { sessionId?: unknown })?.sessionId;
      if (!copy.ok || typeof sessionId !== 'string' || sessionId === '') {
        throw new StoreInputError({
          message: `memoryStore({ facts }): seed ${index} is not a stored fact${copy.ok ? ' (no sessionId)' : ` (${copy.path} ${copy.problem})`}; seed facts read from a store`,
          sessionId: undefined,
          factIndex: index,
        });
      }
      const list = bySession.get(sessionId) ?? [];
      list.push(copy.value as unknown as Fact);
      bySession.set(sessionId, list);
    }
    for (const [sessionId, list] of bySession) {
      const log = new SessionLog({ sessionId, storeName: 'memoryStore' });
      list.sort((left, right) => left.seq - right.seq);
      for (const fact of list) {
        const problem =
          storedFactProblem(fact, { sessionId, seq: log.lastSeq + 1 }) ?? log.restore(fact);
        if (problem !== undefined) {
          throw new StoreInputError({
            message: `memoryStore({ facts }): session ${sessionId}: ${problem}; seed whole sessions read from a store (each keeps its seq, 1, 2, 3, …)`,
            sessionId,
          });
        }
      }
      this.#sessions.set(sessionId, log);
    }
  }
}
