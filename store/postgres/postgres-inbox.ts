import type { JsonObject } from '../../events/json.ts';
import { StoreInputError } from '../event-store.ts';
import { copyPlainJson } from '../plain-json.ts';
import type {
  InboxItem,
  InboxOutcome,
  InboxRequest,
  InboxRequestKind,
  RunInbox,
} from '../run-inbox.ts';
import { LeaseLostError, type RunLease } from '../run-leases.ts';
import {
  checkIds,
  inTransaction,
  type PgPool,
  type PgQueryable,
  type PgRow,
  type PostgresSchema,
} from './postgres-connection.ts';
import { InboxSubscription } from './postgres-inbox-subscription.ts';
import { leaseColumns, leaseStateOf } from './postgres-leases.ts';
import { notificationChannel, type PostgresNotifications } from './postgres-notifications.ts';
import { OutcomeWait } from './postgres-outcome-wait.ts';

const kinds = new Set(['decide', 'steer', 'stop']);

const itemColumns = `id, session_id, run_id, kind, input::text AS input, posted_by,
  (extract(epoch FROM posted_at) * 1000)::float8 AS posted_at_ms, outcome::text AS outcome`;

/** A request checked for the inbox, with its input as the JSON text the row stores. */
interface CheckedRequest {
  id: string;
  sessionId: string;
  runId: string;
  kind: InboxRequestKind;
  inputText: string;
  postedBy: string | null;
}

/** What `settleInboxItem` is given to store. */
type SettleOutcome =
  | { status: 'accepted' }
  | { status: 'refused'; error: { name: string; message: string } };

/**
 * The inbox operations of `postgresStore` (see `RunInbox`): a row per request, a notification
 * per post (on the session's inbox channel) and per settlement (on the request's channel,
 * `notificationChannel`), and catch-up reads, so a missed
 * notification only delays a delivery until the next one or the next reconnect.
 */
export class PostgresInbox implements RunInbox {
  readonly #pool: PgPool;
  readonly #schema: PostgresSchema;
  readonly #notifications: PostgresNotifications;
  readonly #isClosed: () => boolean;
  readonly #table: string;
  // Waits still open when the store closes end with the close's error instead of hanging.
  readonly #waits = new Set<OutcomeWait>();

  constructor(options: {
    pool: PgPool;
    schema: PostgresSchema;
    notifications: PostgresNotifications;
    isClosed: () => boolean;
  }) {
    this.#pool = options.pool;
    this.#schema = options.schema;
    this.#notifications = options.notifications;
    this.#isClosed = options.isClosed;
    this.#table = `${options.schema.sql}.inbox`;
  }

  async inboxItem(id: string): Promise<InboxItem | undefined> {
    checkIds({ id }, 'inboxItem');
    const { rows } = await this.#pool.query(
      `SELECT ${itemColumns} FROM ${this.#table} WHERE id = $1`,
      [id],
    );
    return rows[0] === undefined ? undefined : itemOf(rows[0]);
  }

  async pendingInbox(query: { sessionId: string; runId?: string }): Promise<InboxItem[]> {
    checkIds({ sessionId: query.sessionId }, 'pendingInbox');
    const { rows } = await this.#pool.query(
      `SELECT ${itemColumns} FROM ${this.#table}
       WHERE session_id = $1 AND outcome IS NULL AND ($2::text IS NULL OR run_id = $2)
       ORDER BY posted_at, id`,
      [query.sessionId, query.runId ?? null],
    );
    return rows.map(itemOf);
  }

  /** Ends every wait still open with `error` (the store closed). */
  close(error: Error): void {
    for (const wait of [...this.#waits]) wait.close(error);
  }

  async postToInbox(request: InboxRequest): Promise<void> {
    const checked = checkedRequest(request);
    if (await this.#insert(checked)) return;
    await this.#checkSameRequest(checked);
  }

  subscribeInbox(sessionId: string, listener: (item: InboxItem) => void): () => void {
    checkIds({ sessionId }, 'subscribeInbox');
    const subscription = new InboxSubscription({
      sessionId,
      listener,
      notifications: this.#notifications,
      readPending: () => this.pendingInbox({ sessionId }),
      isClosed: this.#isClosed,
    });
    return () => subscription.stop();
  }

  async settleInboxItem(settle: {
    id: string;
    lease: RunLease;
    outcome: SettleOutcome;
  }): Promise<InboxOutcome> {
    const { id, lease } = settle;
    checkIds({ id }, 'settleInboxItem');
    const outcome = outcomeToStore(settle.outcome, lease, id);
    return inTransaction(this.#pool, async (client) => {
      const item = await this.#lockRequestOfRun(client, id, lease);
      // The first settlement wins; a repeat (a driver retrying) learns the stored one.
      if (item.outcome !== undefined) return item.outcome;
      await this.#checkLeaseHeld(client, lease, id);
      await client.query(
        `UPDATE ${this.#table} SET outcome = $2::json, settled_at = clock_timestamp() WHERE id = $1`,
        [id, JSON.stringify(outcome)],
      );
      await client.query(`SELECT pg_notify($1, '')`, [notificationChannel(this.#schema, 'o', id)]);
      return outcome;
    });
  }

  waitForInboxOutcome(id: string, wait: { signal?: AbortSignal } = {}): Promise<InboxOutcome> {
    checkIds({ id }, 'waitForInboxOutcome');
    return new OutcomeWait({
      id,
      signal: wait.signal,
      notifications: this.#notifications,
      readRequest: () => this.inboxItem(id),
      waits: this.#waits,
    }).outcome;
  }

  /** Inserts the request's row and wakes the session's driver; false when the id is taken. */
  async #insert(request: CheckedRequest): Promise<boolean> {
    const { id, sessionId, runId, kind, inputText, postedBy } = request;
    const { rows } = await this.#pool.query(
      `WITH posted AS (
         INSERT INTO ${this.#table} (id, session_id, run_id, kind, input, posted_by)
         VALUES ($1, $2, $3, $4, $5::json, $6)
         ON CONFLICT (id) DO NOTHING RETURNING id
       )
       SELECT EXISTS (SELECT 1 FROM posted) AS posted, pg_notify($7, '')`,
      [
        id,
        sessionId,
        runId,
        kind,
        inputText,
        postedBy,
        notificationChannel(this.#schema, 'i', sessionId),
      ],
    );
    return rows[0]?.posted === true;
  }

  /** A known id is a retry only with the same request: another one is refused. */
  async #checkSameRequest(request: CheckedRequest): Promise<void> {
    const { id, sessionId } = request;
    const stored = await this.inboxItem(id);
    const same =
      stored !== undefined &&
      stored.sessionId === sessionId &&
      stored.runId === request.runId &&
      stored.kind === request.kind &&
      JSON.stringify(stored.input) === request.inputText;
    if (!same) {
      throw new StoreInputError({
        message: `postgresStore.postToInbox: request id ${id} is already used by another request (${stored?.kind} for run ${stored?.runId} of session ${stored?.sessionId}); give each request its own id`,
        sessionId,
      });
    }
  }

  /** The request's row, locked FOR UPDATE; throws unless it is a request of the lease's run. */
  async #lockRequestOfRun(client: PgQueryable, id: string, lease: RunLease): Promise<InboxItem> {
    const found = await client.query(
      `SELECT ${itemColumns} FROM ${this.#table} WHERE id = $1 FOR UPDATE`,
      [id],
    );
    const item = found.rows[0] === undefined ? undefined : itemOf(found.rows[0]);
    if (item === undefined || item.sessionId !== lease.sessionId || item.runId !== lease.runId) {
      throw new StoreInputError({
        message: `postgresStore.settleInboxItem: ${item === undefined ? `no request has id ${id}` : `request ${id} is for run ${item.runId} of session ${item.sessionId}, not the lease's run ${lease.runId}`}; settle the requests of the run you hold`,
        sessionId: lease.sessionId,
      });
    }
    return item;
  }

  /** Locks the run's lease FOR SHARE and throws `LeaseLostError` unless `lease` is it, live. */
  async #checkLeaseHeld(client: PgQueryable, lease: RunLease, id: string): Promise<void> {
    const current = await client.query(
      `SELECT ${leaseColumns()} FROM ${this.#schema.sql}.leases
       WHERE session_id = $1 AND run_id = $2 FOR SHARE`,
      [lease.sessionId, lease.runId],
    );
    const state = current.rows[0] === undefined ? undefined : leaseStateOf(current.rows[0]);
    if (state?.live && state.workerId === lease.workerId && state.epoch === lease.epoch) return;
    throw new LeaseLostError({
      message: `postgresStore.settleInboxItem: worker ${lease.workerId} no longer holds epoch ${lease.epoch} of run ${lease.runId}'s lease, so request ${id} stays pending for the run's next driver`,
      sessionId: lease.sessionId,
      runId: lease.runId,
      workerId: lease.workerId,
      epoch: lease.epoch,
      current: state,
    });
  }
}

/** Checks a request (ids, kind, a plain JSON object as input); `StoreInputError` otherwise. */
function checkedRequest(request: InboxRequest): CheckedRequest {
  const { id, sessionId, runId, kind } = request ?? {};
  checkIds({ id, sessionId, runId }, 'postToInbox');
  const input = copyPlainJson(request.input);
  if (!kinds.has(kind) || !input.ok || !isObject(input.value)) {
    throw new StoreInputError({
      message: `postgresStore.postToInbox: request ${id} needs a kind of decide, steer or stop and an input that is a plain JSON object (got kind ${JSON.stringify(kind)}${input.ok ? '' : `, input: ${input.path} ${input.problem}`})`,
      sessionId,
    });
  }
  const inputText = JSON.stringify(input.value);
  return { id, sessionId, runId, kind, inputText, postedBy: request.postedBy ?? null };
}

function itemOf(row: PgRow): InboxItem {
  return {
    id: String(row.id),
    sessionId: String(row.session_id),
    runId: String(row.run_id),
    kind: String(row.kind) as InboxItem['kind'],
    input: JSON.parse(String(row.input)) as JsonObject,
    postedBy: row.posted_by === null ? undefined : String(row.posted_by),
    postedAtMs: Number(row.posted_at_ms),
    outcome: row.outcome === null ? undefined : (JSON.parse(String(row.outcome)) as InboxOutcome),
  };
}

function outcomeToStore(outcome: SettleOutcome, lease: RunLease, id: string): InboxOutcome {
  const by = { workerId: lease?.workerId, epoch: lease?.epoch };
  if (outcome?.status === 'accepted') return { status: 'accepted', ...by };
  const error = outcome?.status === 'refused' ? outcome.error : undefined;
  if (typeof error?.name !== 'string' || typeof error.message !== 'string') {
    throw new StoreInputError({
      message: `postgresStore.settleInboxItem: request ${id}'s outcome must be { status: 'accepted' } or { status: 'refused', error: { name, message } }`,
      sessionId: lease?.sessionId,
    });
  }
  return { status: 'refused', error: { name: error.name, message: error.message }, ...by };
}

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
