import type { Fact } from '../events/facts.ts';
import { cloneJson } from './plain-json.ts';

/** Called when a subscriber throws; the store and the other subscribers carry on. */
export type ListenerErrorHandler = (error: unknown, fact: Fact) => void;

/**
 * The subscribers of a store's sessions. Delivers durable facts to each listener in `seq` order,
 * once each, each listener getting its own copy. A listener that appends from inside its callback
 * does not reorder delivery: publishing while a delivery is running queues behind it.
 */
export class FactListeners {
  readonly #bySession = new Map<string, Set<(fact: Fact) => void>>();
  readonly #queue: Delivery[] = [];
  readonly #onListenerError: ListenerErrorHandler;
  #delivering = false;

  constructor(options: { onListenerError?: ListenerErrorHandler } = {}) {
    this.#onListenerError = options.onListenerError ?? warnListenerError;
  }

  /** Adds a listener for facts published after this call; returns its unsubscribe function. */
  add(sessionId: string, listener: (fact: Fact) => void): () => void {
    // A wrapper makes each subscription distinct, even for the same function subscribed twice.
    const entry = (fact: Fact) => listener(fact);
    let listeners = this.#bySession.get(sessionId);
    if (listeners === undefined) {
      listeners = new Set();
      this.#bySession.set(sessionId, listeners);
    }
    listeners.add(entry);
    return () => {
      const current = this.#bySession.get(sessionId);
      current?.delete(entry);
      if (current?.size === 0) this.#bySession.delete(sessionId);
    };
  }

  /**
   * Delivers facts that just became durable. The store's own objects may be passed: listeners
   * only ever get copies.
   */
  publish(sessionId: string, facts: readonly Fact[]): void {
    const current = this.#bySession.get(sessionId);
    if (facts.length === 0 || current === undefined) return;
    // Only the listeners present now receive these facts: a later subscription sees later facts.
    this.#queue.push({ sessionId, facts, listeners: [...current] });
    if (this.#delivering) return;
    this.#delivering = true;
    try {
      for (let item = this.#queue.shift(); item !== undefined; item = this.#queue.shift()) {
        this.#deliver(item);
      }
    } finally {
      this.#delivering = false;
    }
  }

  /** Drops every listener (the store closed). */
  clear(): void {
    this.#bySession.clear();
    this.#queue.length = 0;
  }

  #deliver({ sessionId, facts, listeners }: Delivery): void {
    for (const fact of facts) {
      for (const listener of listeners) {
        // An unsubscribe during delivery takes effect at once.
        if (!this.#bySession.get(sessionId)?.has(listener)) continue;
        try {
          listener(cloneJson(fact));
        } catch (error) {
          reportSafely(this.#onListenerError, error, fact);
        }
      }
    }
  }
}

interface Delivery {
  sessionId: string;
  facts: readonly Fact[];
  listeners: ((fact: Fact) => void)[];
}

function reportSafely(handler: ListenerErrorHandler, error: unknown, fact: Fact): void {
  try {
    handler(error, cloneJson(fact));
  } catch {
    // A failing error handler must not break delivery either; there is nobody left to tell.
  }
}

function warnListenerError(error: unknown, fact: Fact): void {
  const reason = error instanceof Error ? error.message : String(error);
  process.emitWarning(
    `turnlog store: a subscriber of session ${fact.sessionId} threw on seq ${fact.seq} (${reason}); the store and the other subscribers carried on. Pass onListenerError to handle it.`,
    { code: 'TURNLOG_LISTENER_ERROR' },
  );
}
