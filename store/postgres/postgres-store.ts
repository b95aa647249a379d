import type { Fact, NewFact, PartialSnapshot } from '../../events/facts.ts';
import { TurnlogError } from '../../events/turnlog-error.ts';
import { boundPartial, defaultPartialChars } from '../bound-partial.ts';
import {
  type AppendOptions,
  type AppendResult,
  type EventStore,
  type OpenRun,
  StoreClosedError,
  StoreCorruptionError,
  type StoreFinding,
  StoreInputError,
  StoreWriteError,
} from '../event-store.ts';
import { FactListeners, type ListenerErrorHandler } from '../fact-listeners.ts';
import { cloneJson } from '../plain-json.ts';
import { checkEndedBefore, importedLog } from '../retention/ended-session.ts';
import type { RunInbox } from '../run-inbox.ts';
import type { LeaseRenewalThread, RunLeases } from '../run-leases.ts';
import { checkFromSeq, checkSessionId, validateNewFacts } from '../session-log.ts';
import type {
  EndedSession,
  RemovedSession,
  SessionRetention,
  SessionToRemove,
} from '../session-retention.ts';
import { AppendBatches } from './postgres-append-batches.ts';
import {
  defaultTimeouts,
  type PgPool,
  type PostgresSchema,
  type PostgresTimeouts,
  postgresSchema,
} from './postgres-connection.ts';
import { StoreUnavailableError } from './postgres-errors.ts';
import { appendFacts, readFactId, readFacts, readLastFact } from './postgres-facts.ts';
import { PostgresInbox } from './postgres-inbox.ts';
import { postgresRenewalThread } from './postgres-lease-renewer.ts';
import { PostgresLeases } from './postgres-leases.ts';
import { PostgresNotifications } from './postgres-notifications.ts';
import { readOpenRuns, readUnattendedRuns } from './postgres-open-runs.ts';
import { StorePool } from './postgres-pool.ts';
import { endedSessions, importFacts, removeSessions } from './postgres-retention.ts';
import { SessionQueues } from './postgres-session-queues.ts';
import { FactSubscriptions } from './postgres-subscriptions.ts';

/** Options of `postgresStore`. Give `connectionString` or `pool`, not both (neither: `PG*` variables). */
export interface PostgresStoreOptions {
  /** `postgres://user:password@host:5432/database`; the store makes a `pg.Pool` and ends it on `close()`. */
  connectionString?: string;
  /**
   * A `pg.Pool` of yours; the store never ends it. It holds one of its connections for LISTEN.
   * A worker on such a store renews its leases from the event loop: a thread cannot copy your
   * pool (`worker.renewal`).
   */
  pool?: PgPool;
  /** The schema holding turnlog's tables (created at open). Default `turnlog`. */
  schema?: string;
  /** Bound of a partial snapshot's `text` and `reasoning`, in characters (default 16 KiB). */
  partialChars?: number;
  /** Called when a subscriber throws (default: a process warning). */
  onListenerError?: ListenerErrorHandler;
  /**
   * Time bounds (connect 10 s, each statement 30 s, idle 10 s, keepalive after 10 s, `close()`
   * 5 s): a database that stops answering makes each call fail with `StoreUnavailableError`
   * (an append with `StoreWriteError`) within them, and `close()` return. A pool of yours keeps
   * its own settings; only `closeMs` applies to it.
   */
  timeouts?: PostgresTimeouts;
}

/** An `EventStore` shared by several processes, with leases and an inbox per run. */
export type PostgresStore = EventStore & RunLeases & RunInbox & SessionRetention;

/**
 * An `EventStore` over PostgreSQL (through `pg`, node-postgres, loaded when the store first
 * connects): facts in a table keyed by (session, seq), each append one transaction, migrations
 * at open under an advisory lock, subscriptions across processes (LISTEN/NOTIFY plus catch-up
 * reads by `seq`). It also implements `RunLeases` (one driver per run, fenced appends) and
 * `RunInbox` (requests handed to a run's driver), for several workers on one database.
 *
 * @example
 * const store = postgresStore({ connectionString: process.env.DATABASE_URL });
 * const runtime = createRuntime({ model, tools, store });
 */
export function postgresStore(options: PostgresStoreOptions = {}): PostgresStore {
  return new PostgresEventStore(options);
}

class PostgresEventStore implements PostgresStore {
  readonly #schema: PostgresSchema;
  readonly #pool: StorePool;
  readonly #listeners: FactListeners;
  readonly #notifications: PostgresNotifications;
  readonly #subscriptions: FactSubscriptions;
  readonly #leases: PostgresLeases;
  readonly #inbox: PostgresInbox;
  readonly #renewalThread: LeaseRenewalThread | undefined;
  readonly #partialChars: number;
  readonly #appends = new SessionQueues();
  readonly #batches: AppendBatches;
  readonly #partialWrites = new SessionQueues();
  readonly #findings = new Map<string, StoreFinding>();
  #closing: Promise<void> | undefined;

  constructor(options: PostgresStoreOptions) {
    if (options.pool !== undefined && options.connectionString !== undefined) {
      throw new StoreInputError({
        message:
          'postgresStore: give either connectionString or pool, not both (the store would not know which database to use)',
        sessionId: undefined,
      });
    }
    this.#schema = postgresSchema(options.schema ?? 'turnlog');
    this.#partialChars = options.partialChars ?? defaultPartialChars;
    const timeouts = { ...defaultTimeouts, ...definedOnly(options.timeouts) };
    // Every part works through this pool, which opens the real one (and migrates) on first use.
    this.#pool = new StorePool({
      pool: options.pool,
      connectionString: options.connectionString,
      schema: this.#schema,
      timeouts,
    });
    this.#renewalThread = postgresRenewalThread({
      pool: options.pool,
      connectionString: options.connectionString,
      schema: this.#schema.name,
      timeouts,
    });
    this.#batches = new AppendBatches({ pool: this.#pool, schema: this.#schema });
    this.#listeners = new FactListeners({ onListenerError: options.onListenerError });
    this.#notifications = new PostgresNotifications({
      connect: () => this.#pool.connect(),
      schema: this.#schema,
    });
    this.#subscriptions = new FactSubscriptions({
      notifications: this.#notifications,
      listeners: this.#listeners,
      lastFact: (sessionId) => readLastFact(this.#pool, this.#schema, sessionId),
      factId: (sessionId, seq) => readFactId(this.#pool, this.#schema, sessionId, seq),
      read: (sessionId, fromSeq) => this.#read(sessionId, fromSeq),
    });
    this.#leases = new PostgresLeases(this.#pool, this.#schema);
    this.#inbox = new PostgresInbox({
      pool: this.#pool,
      schema: this.#schema,
      notifications: this.#notifications,
      isClosed: () => this.#closing !== undefined,
    });
  }

  async append(
    sessionId: string,
    facts: readonly NewFact[],
    options: AppendOptions = {},
  ): Promise<AppendResult> {
    this.#checkOpen('append');
    checkSessionId(sessionId, 'postgresStore.append');
    const where = `postgresStore.append('${sessionId}')`;
    // Checked and copied now: a caller changing its objects after the call changes nothing.
    const candidates = validateNewFacts(facts, options, { where, sessionId });
    return this.#appends.run(sessionId, async () => {
      await this.#subscriptions.started(sessionId);
      let result: AppendResult;
      try {
        result = await appendFacts({
          pool: this.#pool,
          schema: this.#schema,
          sessionId,
          candidates,
          expectedSeq: options.expectedSeq,
          where,
          batches: this.#batches,
        });
      } catch (error) {
        if (TurnlogError.isTurnlogError(error)) throw error;
        throw new StoreWriteError({
          message: `${where}: the database did not confirm the append (${(error as Error)?.message}); it may or may not be stored: read the session and retry with the same fact ids (a repeat is a no-op)`,
          sessionId,
          file: undefined,
          cause: error,
        });
      }
      // Subscribers of this store have the facts before the append resolves.
      const watched = this.#subscriptions.watches(sessionId);
      await this.#subscriptions.appended(sessionId, result.appended);
      // The facts are this call's own (copied when checked, sequenced here, held by nothing of
      // the store once written): copied again only when this store's subscribers had them too.
      // A worker driving its runs subscribes to none of them (issue 26: a copy per fact per step).
      const appended = watched ? result.appended.map(cloneJson) : result.appended;
      return { appended, lastSeq: result.lastSeq };
    });
  }

  async read(sessionId: string, options: { fromSeq?: number } = {}): Promise<Fact[]> {
    this.#checkOpen('read');
    checkSessionId(sessionId, 'postgresStore.read');
    checkFromSeq(options.fromSeq, `postgresStore.read('${sessionId}')`);
    return this.#call('read', async () => {
      // The appends called before this read are in it, so its last seq is what expectedSeq checks.
      await this.#appends.settled(sessionId);
      await this.#subscriptions.started(sessionId);
      return this.#read(sessionId, options.fromSeq ?? 1);
    });
  }

  subscribe(sessionId: string, listener: (fact: Fact) => void): () => void {
    this.#checkOpen('subscribe');
    checkSessionId(sessionId, 'postgresStore.subscribe');
    return this.#subscriptions.subscribe(sessionId, listener);
  }

  async openRuns(): Promise<OpenRun[]> {
    // The runs index checked against the facts' run.started/run.ended (the log is the truth).
    const { runs, findings } = await this.#query('openRuns', (pool) =>
      readOpenRuns(pool, this.#schema),
    );
    this.#addFindings(findings);
    // JavaScript's order of session ids, as every store gives it (the stable sort keeps start order).
    return runs.sort((left, right) => compare(left.sessionId, right.sessionId));
  }

  async findings(): Promise<StoreFinding[]> {
    this.#checkOpen('findings');
    return [...this.#findings.values()].map((finding) => ({ ...finding }));
  }

  async sessions(): Promise<string[]> {
    const { rows } = await this.#query('sessions', (pool) =>
      pool.query(`SELECT session_id FROM ${this.#schema.sql}.sessions WHERE last_seq > 0`),
    );
    return rows.map((row) => String(row.session_id)).sort(compare);
  }

  async savePartial(sessionId: string, partial: PartialSnapshot): Promise<void> {
    this.#checkOpen('savePartial');
    checkSessionId(sessionId, 'postgresStore.savePartial');
    const where = 'postgresStore.savePartial';
    const bounded = boundPartial(partial, { maxChars: this.#partialChars, where, sessionId });
    await this.#call('savePartial', () =>
      this.#partialWrites.run(sessionId, () =>
        this.#pool.query(
          `INSERT INTO ${this.#schema.sql}.partials (session_id, body) VALUES ($1, $2::json)
         ON CONFLICT (session_id) DO UPDATE SET body = excluded.body`,
          [sessionId, JSON.stringify(bounded)],
        ),
      ),
    );
  }

  async loadPartial(sessionId: string): Promise<PartialSnapshot | undefined> {
    this.#checkOpen('loadPartial');
    checkSessionId(sessionId, 'postgresStore.loadPartial');
    const { rows } = await this.#call('loadPartial', async () => {
      await this.#partialWrites.settled(sessionId);
      return this.#pool.query(
        `SELECT body::text AS body FROM ${this.#schema.sql}.partials WHERE session_id = $1`,
        [sessionId],
      );
    });
    return rows[0] === undefined
      ? undefined
      : (JSON.parse(String(rows[0].body)) as PartialSnapshot);
  }

  async clearPartial(sessionId: string): Promise<void> {
    this.#checkOpen('clearPartial');
    checkSessionId(sessionId, 'postgresStore.clearPartial');
    await this.#call('clearPartial', () =>
      this.#partialWrites.run(sessionId, () =>
        this.#pool.query(`DELETE FROM ${this.#schema.sql}.partials WHERE session_id = $1`, [
          sessionId,
        ]),
      ),
    );
  }

  async endedSessions(options: { endedBefore: Date }): Promise<EndedSession[]> {
    this.#checkOpen('endedSessions');
    checkEndedBefore(options?.endedBefore, 'postgresStore.endedSessions');
    const { endedBefore } = options;
    const { sessions, findings } = await this.#call('endedSessions', () =>
      endedSessions({ pool: this.#pool, schema: this.#schema, endedBefore }),
    );
    this.#addFindings(findings);
    return sessions;
  }

  async removeSessions(sessions: readonly SessionToRemove[]): Promise<RemovedSession[]> {
    this.#checkOpen('removeSessions');
    for (const { sessionId } of sessions) checkSessionId(sessionId, 'postgresStore.removeSessions');
    if (sessions.length === 0) return [];
    const { outcomes, findings } = await this.#call('removeSessions', () =>
      removeSessions({ pool: this.#pool, schema: this.#schema, sessions }),
    );
    this.#addFindings(findings);
    // A subscription follows the id: a session started again is delivered from seq 1.
    for (const { sessionId, outcome } of outcomes) {
      if (outcome === 'removed') this.#subscriptions.removed(sessionId);
    }
    return outcomes;
  }

  async importFacts(sessionId: string, facts: readonly Fact[]): Promise<'imported' | 'exists'> {
    this.#checkOpen('importFacts');
    checkSessionId(sessionId, 'postgresStore.importFacts');
    const log = importedLog({ sessionId, facts, storeName: 'postgresStore' });
    // In the session's append queue: this process's appends to it come before or after, whole.
    return this.#call('importFacts', () =>
      this.#appends.run(sessionId, async () => {
        await this.#subscriptions.started(sessionId);
        const facts = log.read();
        return importFacts({ pool: this.#pool, schema: this.#schema, sessionId, facts });
      }),
    );
  }

  close(): Promise<void> {
    // Closing twice is harmless; every other call after close throws StoreClosedError.
    this.#closing ??= this.#close();
    return this.#closing;
  }

  acquireLease: RunLeases['acquireLease'] = (options) =>
    this.#call('acquireLease', () => this.#leases.acquireLease(options));
  renewLeases: RunLeases['renewLeases'] = (options) =>
    this.#call('renewLeases', () => this.#leases.renewLeases(options));
  releaseLease: RunLeases['releaseLease'] = (options) =>
    this.#call('releaseLease', () => this.#leases.releaseLease(options));
  takeOverExpiredLeases: RunLeases['takeOverExpiredLeases'] = (options) =>
    this.#call('takeOverExpiredLeases', () => this.#leases.takeOverExpiredLeases(options));
  leaseOf: RunLeases['leaseOf'] = (options) =>
    this.#call('leaseOf', () => this.#leases.leaseOf(options));
  unattendedRuns: RunLeases['unattendedRuns'] = async () => {
    const runs = await this.#query('unattendedRuns', (pool) =>
      readUnattendedRuns(pool, this.#schema),
    );
    // JavaScript's order of session ids, as openRuns() gives it.
    return runs.sort((left, right) => compare(left.sessionId, right.sessionId));
  };
  /** A thread of its own renews the leases (a store given `pool` cannot say how: `undefined`). */
  leaseRenewalThread = (): LeaseRenewalThread | undefined => this.#renewalThread;
  postToInbox: RunInbox['postToInbox'] = (request) =>
    this.#call('postToInbox', () => this.#inbox.postToInbox(request));
  pendingInbox: RunInbox['pendingInbox'] = (options) =>
    this.#call('pendingInbox', () => this.#inbox.pendingInbox(options));
  settleInboxItem: RunInbox['settleInboxItem'] = (options) =>
    this.#call('settleInboxItem', () => this.#inbox.settleInboxItem(options));
  inboxItem: RunInbox['inboxItem'] = (id) =>
    this.#call('inboxItem', () => this.#inbox.inboxItem(id));
  waitForInboxOutcome: RunInbox['waitForInboxOutcome'] = (id, options) =>
    this.#call('waitForInboxOutcome', () => this.#inbox.waitForInboxOutcome(id, options), {
      passes: (error) => error === options?.signal?.reason,
    });

  subscribeInbox: RunInbox['subscribeInbox'] = (sessionId, listener) => {
    this.#checkOpen('subscribeInbox');
    return this.#inbox.subscribeInbox(sessionId, listener);
  };

  async #read(sessionId: string, fromSeq: number): Promise<Fact[]> {
    const { facts, problem } = await readFacts({
      db: this.#pool,
      schema: this.#schema,
      sessionId,
      fromSeq,
    });
    if (problem === undefined) return facts;
    const file = `${this.#schema.name}.facts`;
    const message = `postgresStore: session ${sessionId} in ${file}: ${problem}; it is left as it is: inspect the rows (never edit a stored fact), then restore them from a backup`;
    this.#findings.set(sessionId, {
      sessionId,
      kind: 'unreadable',
      file,
      line: undefined,
      message,
    });
    throw new StoreCorruptionError({ message, file });
  }

  async #close(): Promise<void> {
    // Appends (and partial writes) called before close finish first (each within queryMs; on a
    // database that does not answer, close waits closeMs for them: they fail on their own).
    await Promise.race([
      Promise.all([this.#appends.allSettled(), this.#partialWrites.allSettled()]),
      delay(this.#pool.timeouts.closeMs),
    ]);
    this.#subscriptions.close();
    this.#listeners.clear();
    this.#inbox.close(
      new StoreClosedError({
        message:
          'postgresStore.waitForInboxOutcome: the store was closed while waiting; the request stays in the inbox: wait for it on an open store',
      }),
    );
    // UNLISTEN on a database that does not answer waits no longer than closeMs.
    await Promise.race([this.#notifications.close(), delay(this.#pool.timeouts.closeMs)]);
    await this.#pool.close();
  }

  /** `#call` for one statement on the pool. */
  #query<T>(method: string, work: (pool: StorePool) => Promise<T>): Promise<T> {
    return this.#call(method, () => work(this.#pool));
  }

  /**
   * Runs a store method: refused once the store is closed; node-postgres's errors (refused,
   * cut or timed-out connections, a server ending the session) become `StoreUnavailableError`,
   * saying whether the method may have written (`writes`) and that a retry is safe. Turnlog's own
   * errors, and those `passes` names (an abort signal's reason), go through as they are.
   */
  async #call<T>(
    method: string,
    work: () => Promise<T>,
    options: { passes?: (error: unknown) => boolean } = {},
  ): Promise<T> {
    this.#checkOpen(method);
    try {
      return await work();
    } catch (error) {
      if (TurnlogError.isTurnlogError(error) || options.passes?.(error) === true) throw error;
      throw unavailable(method, error);
    }
  }

  /** Keeps the first finding of each session (the log and its runs index disagree). */
  #addFindings(findings: readonly StoreFinding[]): void {
    for (const finding of findings) {
      const sessionId = finding.sessionId ?? '';
      if (!this.#findings.has(sessionId)) this.#findings.set(sessionId, finding);
    }
  }

  #checkOpen(method: string): void {
    if (this.#closing !== undefined) {
      throw new StoreClosedError({
        message: `postgresStore.${method}: the store is closed; create a new store to go on`,
      });
    }
  }
}

/** The methods that write: when one fails, what it wrote may or may not be committed. */
const writingMethods = new Set([
  'acquireLease',
  'renewLeases',
  'releaseLease',
  'takeOverExpiredLeases',
  'postToInbox',
  'settleInboxItem',
  'savePartial',
  'clearPartial',
  'removeSessions',
  'importFacts',
]);

/** A node-postgres error of a store method, as turnlog's `StoreUnavailableError`. */
function unavailable(method: string, error: unknown): StoreUnavailableError {
  const mayBeRecorded = writingMethods.has(method);
  const code = (error as { code?: unknown } | undefined)?.code;
  const reason = `${(error as Error)?.message ?? String(error)}${typeof code === 'string' ? `, ${code}` : ''}`;
  return new StoreUnavailableError({
    message: `postgresStore.${method}: the database did not answer (${reason}); ${mayBeRecorded ? 'it may or may not have recorded the call; ' : 'nothing was recorded; '}call it again once the database is back (a repeat is safe)`,
    cause: error,
    method,
    mayBeRecorded,
    retrySafe: true,
  });
}

/** The options given, without those set to `undefined`. */
function definedOnly<T extends object>(options: T | undefined): Partial<T> {
  return Object.fromEntries(
    Object.entries(options ?? {}).filter(([, value]) => value !== undefined),
  ) as Partial<T>;
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

function compare(left: string, right: string): number {
  return left < right ? -1 : left > right ? 1 : 0;
}
