import type { Fact } from '../../events/facts.ts';
import type { FactListeners } from '../fact-listeners.ts';
import type { PostgresNotifications } from './postgres-notifications.ts';

interface SubscriptionSources {
  notifications: PostgresNotifications;
  listeners: FactListeners;
  /** The session's last seq now (0 when it has no fact) and that fact's id. */
  lastFact: (sessionId: string) => Promise<{ seq: number; id: string | undefined }>;
  /** The id of the session's fact at `seq`, `undefined` when it has none there. */
  factId: (sessionId: string, seq: number) => Promise<string | undefined>;
  /** The session's facts from `fromSeq` on; throws rather than return a shortened log. */
  read: (sessionId: string, fromSeq: number) => Promise<Fact[]>;
}

const firstRetryMs = 50;
const maxRetryMs = 2_000;

/**
 * `subscribe` across processes. Per subscribed session, a watcher knows the last `seq` its
 * listeners got and reads the facts after it (`seq > delivered`) whenever something may have
 * been appended: a notification (on the session's channel, `notificationChannel(schema, 'f',
 * session)`, with the last seq as payload, sent by the append's transaction and delivered only
 * after it committed, and only to a store that LISTENs on it: one with a subscriber of the session), a reconnect of the LISTEN connection (notifications sent
 * while it was down are lost), or an append of this store. So a notification that arrives before,
 * during or after a read, twice or never, changes only when a fact is delivered, never whether,
 * and each fact is delivered once, in `seq` order.
 *
 * A subscription follows the session id across a purge, as memoryStore's and lowdbStore's do:
 * when the session is removed and started again, its listeners get the new session's facts from
 * seq 1. Each read is followed by a check that the fact delivered last is still there (its id at
 * its seq, one index lookup): when it is not, the session was removed, and the watcher starts
 * again at seq 0. A removal by this store makes the watcher read at once (`removed`); one by
 * another process is found by the next read (a notification of the new session's appends, a
 * reconnect). An append of this store at or below the seq delivered (other than that very fact)
 * waits for such a read.
 *
 *   subscribe(session):            LISTEN on its channel is active → delivered = its last seq
 *   notification / reconnect:      read facts with seq > delivered → publish → delivered = last
 *   this store appended s..e:      s = delivered + 1 → publish at once; else read as above
 */
export class FactSubscriptions {
  readonly #sources: SubscriptionSources;
  readonly #watchers = new Map<string, SessionWatcher>();

  constructor(sources: SubscriptionSources) {
    this.#sources = sources;
  }

  /** Adds a listener for the facts appended to the session from now on, by any process. */
  subscribe(sessionId: string, listener: (fact: Fact) => void): () => void {
    let watcher = this.#watchers.get(sessionId);
    if (watcher === undefined) {
      watcher = new SessionWatcher(sessionId, this.#sources);
      this.#watchers.set(sessionId, watcher);
    }
    const started = watcher;
    started.count += 1;
    const remove = this.#sources.listeners.add(sessionId, listener);
    let removed = false;
    return () => {
      if (removed) return;
      removed = true;
      remove();
      started.count -= 1;
      if (started.count === 0 && this.#watchers.get(sessionId) === started) {
        started.stop();
        this.#watchers.delete(sessionId);
      }
    };
  }

  /**
   * Resolves once the session's subscriptions know where they start, so a read or an append
   * called after `subscribe` is on the subscription's side of that point (none is missed).
   */
  started(sessionId: string): Promise<void> {
    return this.#watchers.get(sessionId)?.started ?? Promise.resolve();
  }

  /** True while the session has a subscriber in this store. */
  watches(sessionId: string): boolean {
    return this.#watchers.has(sessionId);
  }

  /** Delivers facts this store just appended; resolves once they were delivered (or could not be). */
  appended(sessionId: string, facts: readonly Fact[]): Promise<void> {
    return this.#watchers.get(sessionId)?.appended(facts) ?? Promise.resolve();
  }

  /**
   * The session was removed by this store (a purge, committed): its watcher reads at once, finds
   * the fact it delivered last gone and starts again at seq 0, so a session started again under
   * the id is delivered from seq 1 (an append of it made meanwhile waits for that read).
   */
  removed(sessionId: string): void {
    this.#watchers.get(sessionId)?.check();
  }

  /** Stops every watcher (the store closed). */
  close(): void {
    for (const watcher of this.#watchers.values()) watcher.stop();
    this.#watchers.clear();
  }
}

class SessionWatcher {
  count = 0;
  readonly started: Promise<void>;
  readonly #sessionId: string;
  readonly #sources: SubscriptionSources;
  readonly #stopListening: () => void;
  readonly #stopReconnect: () => void;
  readonly #waiters: { seq: number; resolve: () => void }[] = [];
  /** The last seq the listeners got; `undefined` until the starting point is known. */
  #delivered: number | undefined;
  /** The id of the fact at `#delivered` (`undefined`: none yet, or not known). */
  #deliveredId: string | undefined;
  /** The highest seq a notification announced. */
  #announced = 0;
  #reading = false;
  #again = false;
  #stopped = false;
  #retryMs = firstRetryMs;
  #retryTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(sessionId: string, sources: SubscriptionSources) {
    this.#sessionId = sessionId;
    this.#sources = sources;
    this.#stopListening = sources.notifications.listen('f', sessionId, (detail) => {
      this.#announced = Math.max(this.#announced, Number(detail) || 0);
      this.#catchUp();
    });
    this.#stopReconnect = sources.notifications.onReconnect(() => this.#catchUp());
    this.started = this.#start();
  }

  appended(facts: readonly Fact[]): Promise<void> {
    const first = facts[0];
    const last = facts.at(-1);
    if (first === undefined || last === undefined || this.#stopped) return Promise.resolve();
    // Without a starting point (the database was unreachable when subscribing), start here.
    this.#delivered ??= first.seq - 1;
    // Delivered already by a read, when its last fact is the one delivered last; anything else
    // at or below that seq is a session purged and started again: a read sorts it out.
    if (last.seq === this.#delivered && last.id === this.#deliveredId) return Promise.resolve();
    if (first.seq === this.#delivered + 1) {
      this.#publish(facts);
      return Promise.resolve();
    }
    // Another process appended in between (or purged): read the gap, then these.
    this.#announced = Math.max(this.#announced, last.seq);
    const delivered = new Promise<void>((resolve) => {
      this.#waiters.push({ seq: last.seq, resolve });
    });
    this.#catchUp();
    return delivered;
  }

  /** Reads now: the session may have been removed (see `FactSubscriptions.removed`). */
  check(): void {
    this.#catchUp();
  }

  /** Starts again at seq 0: the session was removed (and perhaps started again). */
  #restart(): void {
    this.#announced = 0;
    this.#delivered = 0;
    this.#deliveredId = undefined;
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#retryTimer);
    this.#stopListening();
    this.#stopReconnect();
    this.#resolveWaiters(Number.POSITIVE_INFINITY);
  }

  async #start(): Promise<void> {
    try {
      // LISTEN first: every append that commits after the read below is also notified.
      await this.#sources.notifications.ready('f', this.#sessionId);
      const lastFact = await this.#sources.lastFact(this.#sessionId);
      if (this.#delivered === undefined) {
        this.#delivered = lastFact.seq;
        this.#deliveredId = lastFact.id;
      }
      this.#catchUp();
    } catch {
      this.#retry(() => this.#start());
    }
  }

  #catchUp(): void {
    if (this.#stopped || this.#delivered === undefined) return;
    if (this.#reading) {
      this.#again = true;
      return;
    }
    this.#reading = true;
    this.#readOn().finally(() => {
      this.#reading = false;
    });
  }

  async #readOn(): Promise<void> {
    try {
      do {
        this.#again = false;
        const delivered = this.#delivered ?? 0;
        const deliveredId = this.#deliveredId;
        const facts = await this.#sources.read(this.#sessionId, delivered + 1);
        // Checked after the read: the fact delivered last still there means the facts read
        // follow it (a purge after the read is found by the next one).
        const heldId =
          deliveredId === undefined
            ? undefined
            : await this.#sources.factId(this.#sessionId, delivered);
        if (this.#stopped) return;
        if (deliveredId !== undefined && heldId !== deliveredId && this.#delivered === delivered) {
          // The fact delivered last is gone: the session was purged (and perhaps started again).
          this.#restart();
          this.#again = true;
          continue;
        }
        // An append of this store may have delivered some of them meanwhile.
        this.#publish(facts.filter((fact) => fact.seq > (this.#delivered ?? 0)));
        if (!this.#again && (this.#delivered ?? 0) < this.#announced) {
          // Announced but not read: the commit is not visible to us yet; look again shortly.
          this.#retry(() => this.#catchUp());
          return;
        }
      } while (this.#again && !this.#stopped);
      this.#retryMs = firstRetryMs;
      // An append of this store found delivered already (or purged) waited for this read.
      this.#resolveWaiters(this.#delivered ?? 0);
    } catch {
      // Do not keep an append waiting on a database it cannot reach; read again later.
      this.#resolveWaiters(Number.POSITIVE_INFINITY);
      this.#retry(() => this.#catchUp());
    }
  }

  #publish(facts: readonly Fact[]): void {
    const last = facts.at(-1);
    if (last === undefined) return;
    this.#delivered = last.seq;
    this.#deliveredId = last.id;
    this.#sources.listeners.publish(this.#sessionId, facts);
    this.#resolveWaiters(last.seq);
  }

  #resolveWaiters(throughSeq: number): void {
    for (let index = this.#waiters.length - 1; index >= 0; index -= 1) {
      const waiter = this.#waiters[index];
      if (waiter !== undefined && waiter.seq <= throughSeq) {
        this.#waiters.splice(index, 1);
        waiter.resolve();
      }
    }
  }

  #retry(work: () => void): void {
    if (this.#stopped || this.#retryTimer !== undefined) return;
    const delay = this.#retryMs;
    this.#retryMs = Math.min(this.#retryMs * 2, maxRetryMs);
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = undefined;
      work();
    }, delay);
    this.#retryTimer.unref();
  }
}
