import type { JsonObject } from '../../events/json.ts';
import { StoreInputError } from '../event-store.ts';
import { copyPlainJson } from '../plain-json.ts';
import type { InboxItem, InboxOutcome, InboxRequest, RunInbox } from '../run-inbox.ts';
import { LeaseLostError, type RunLease } from '../run-leases.ts';
import {
  checkIds,
  inTransaction,
  md5,
  type PgPool,
  type PgRow,
  type PostgresSchema,
} from './postgres-connection.ts';
import { leaseColumns, leaseStateOf } from './postgres-leases.ts';
import type { PostgresNotifications } from './postgres-notifications.ts';

const kinds = new Set(['decide', 'steer', 'stop']);

const itemColumns = `id, session_id, run_id, kind, input::text AS input, posted_by,
  (extract(epoch FROM posted_at) * 1000)::float8 AS posted_at_ms, outcome::text AS outcome`;

/**
 * The inbox operations of `postgresStore` (see `RunInbox`): a row per request, a notification
 * per post (`i:md5(session)`) and per settlement (`o:md5(id)`), and catch-up reads, so a missed
 * notification only delays a delivery until the next one or the next reconnect.
 */
export function postgresInbox(options: {
  pool: PgPool;
  schema: PostgresSchema;
  notifications: PostgresNotifications;
  isClosed: () => boolean;
}): RunInbox & { close(error: Error): void } {
  const { pool, schema, notifications } = options;
  const table = `${schema.sql}.inbox`;
  // Waits still open when the store closes end with the close's error instead of hanging.
  const waits = new Set<(error: Error) => void>();

  async function inboxItem(id: string): Promise<InboxItem | undefined> {
    checkIds({ id }, 'inboxItem');
    const { rows } = await pool.query(`SELECT ${itemColumns} FROM ${table} WHERE id = $1`, [id]);
    return rows[0] === undefined ? undefined : itemOf(rows[0]);
  }

  async function pendingInbox(query: { sessionId: string; runId?: string }) {
    checkIds({ sessionId: query.sessionId }, 'pendingInbox');
    const { rows } = await pool.query(
      `SELECT ${itemColumns} FROM ${table}
       WHERE session_id = $1 AND outcome IS NULL AND ($2::text IS NULL OR run_id = $2)
       ORDER BY posted_at, id`,
      [query.sessionId, query.runId ?? null],
    );
    return rows.map(itemOf);
  }

  return {
    inboxItem,
    pendingInbox,

    close(error: Error): void {
      for (const stop of [...waits]) stop(error);
    },

    async postToInbox(request: InboxRequest): Promise<void> {
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
      const { rows } = await pool.query(
        `WITH posted AS (
           INSERT INTO ${table} (id, session_id, run_id, kind, input, posted_by)
           VALUES ($1, $2, $3, $4, $5::json, $6)
           ON CONFLICT (id) DO NOTHING RETURNING id
         )
         SELECT EXISTS (SELECT 1 FROM posted) AS posted, pg_notify($7, 'i:' || md5($2))`,
        [id, sessionId, runId, kind, inputText, request.postedBy ?? null, schema.channel],
      );
      if (rows[0]?.posted === true) return;
      const stored = await inboxItem(id);
      const same =
        stored !== undefined &&
        stored.sessionId === sessionId &&
        stored.runId === runId &&
        stored.kind === kind &&
        JSON.stringify(stored.input) === inputText;
      if (!same) {
        throw new StoreInputError({
          message: `postgresStore.postToInbox: request id ${id} is already used by another request (${stored?.kind} for run ${stored?.runId} of session ${stored?.sessionId}); give each request its own id`,
          sessionId,
        });
      }
    },

    subscribeInbox(sessionId: string, listener: (item: InboxItem) => void): () => void {
      checkIds({ sessionId }, 'subscribeInbox');
      const delivered = new Set<string>();
      let active = true;
      let reading: Promise<void> | undefined;
      let again = false;
      const deliver = async () => {
        do {
          again = false;
          const items = await pendingInbox({ sessionId });
          for (const item of items) {
            if (!active || delivered.has(item.id)) continue;
            delivered.add(item.id);
            reportThrow(() => listener(item), item);
          }
        } while (again && active);
      };
      const catchUp = () => {
        if (!active || options.isClosed()) return;
        if (reading !== undefined) {
          again = true;
          return;
        }
        reading = notifications
          .ready()
          .then(deliver)
          .catch(() => {
            // The next notification or reconnect reads again.
          })
          .finally(() => {
            reading = undefined;
          });
      };
      const stopListening = notifications.listen('i', md5(sessionId), catchUp);
      const stopReconnect = notifications.onReconnect(catchUp);
      catchUp();
      return () => {
        active = false;
        stopListening();
        stopReconnect();
      };
    },

    async settleInboxItem(settle: {
      id: string;
      lease: RunLease;
      outcome:
        | { status: 'accepted' }
        | { status: 'refused'; error: { name: string; message: string } };
    }): Promise<InboxOutcome> {
      const { id, lease } = settle;
      checkIds({ id }, 'settleInboxItem');
      const outcome = outcomeToStore(settle.outcome, lease, id);
      return inTransaction(pool, async (client) => {
        const found = await client.query(
          `SELECT ${itemColumns} FROM ${table} WHERE id = $1 FOR UPDATE`,
          [id],
        );
        const item = found.rows[0] === undefined ? undefined : itemOf(found.rows[0]);
        if (
          item === undefined ||
          item.sessionId !== lease.sessionId ||
          item.runId !== lease.runId
        ) {
          throw new StoreInputError({
            message: `postgresStore.settleInboxItem: ${item === undefined ? `no request has id ${id}` : `request ${id} is for run ${item.runId} of session ${item.sessionId}, not the lease's run ${lease.runId}`}; settle the requests of the run you hold`,
            sessionId: lease.sessionId,
          });
        }
        // The first settlement wins; a repeat (a driver retrying) learns the stored one.
        if (item.outcome !== undefined) return item.outcome;
        const current = await client.query(
          `SELECT ${leaseColumns()} FROM ${schema.sql}.leases
           WHERE session_id = $1 AND run_id = $2 FOR SHARE`,
          [lease.sessionId, lease.runId],
        );
        const state = current.rows[0] === undefined ? undefined : leaseStateOf(current.rows[0]);
        if (!(state?.live && state.workerId === lease.workerId && state.epoch === lease.epoch)) {
          throw new LeaseLostError({
            message: `postgresStore.settleInboxItem: worker ${lease.workerId} no longer holds epoch ${lease.epoch} of run ${lease.runId}'s lease, so request ${id} stays pending for the run's next driver`,
            sessionId: lease.sessionId,
            runId: lease.runId,
            workerId: lease.workerId,
            epoch: lease.epoch,
            current: state,
          });
        }
        await client.query(
          `UPDATE ${table} SET outcome = $2::json, settled_at = clock_timestamp() WHERE id = $1`,
          [id, JSON.stringify(outcome)],
        );
        await client.query(`SELECT pg_notify($1, 'o:' || md5($2))`, [schema.channel, id]);
        return outcome;
      });
    },

    waitForInboxOutcome(id: string, wait: { signal?: AbortSignal } = {}): Promise<InboxOutcome> {
      checkIds({ id }, 'waitForInboxOutcome');
      return new Promise<InboxOutcome>((resolve, reject) => {
        let finished = false;
        const finish = (settle: () => void) => {
          if (finished) return;
          finished = true;
          waits.delete(onClose);
          stopListening();
          stopReconnect();
          wait.signal?.removeEventListener('abort', onAbort);
          settle();
        };
        const check = () => {
          if (finished) return;
          inboxItem(id).then(
            (item) => {
              if (item === undefined) {
                finish(() =>
                  reject(
                    new StoreInputError({
                      message: `postgresStore.waitForInboxOutcome: no request has id ${id}; post it with postToInbox first`,
                      sessionId: undefined,
                    }),
                  ),
                );
              } else if (item.outcome !== undefined) {
                const { outcome } = item;
                finish(() => resolve(outcome));
              }
            },
            // A failed read is retried by the next notification or reconnect.
            () => {},
          );
        };
        const onAbort = () => finish(() => reject(wait.signal?.reason));
        const onClose = (error: Error) => finish(() => reject(error));
        waits.add(onClose);
        const stopListening = notifications.listen('o', md5(id), check);
        const stopReconnect = notifications.onReconnect(check);
        if (wait.signal?.aborted) return onAbort();
        wait.signal?.addEventListener('abort', onAbort, { once: true });
        notifications.ready().then(check, (error) => finish(() => reject(error)));
      });
    },
  };
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

function outcomeToStore(
  outcome: { status: 'accepted' } | { status: 'refused'; error: { name: string; message: string } },
  lease: RunLease,
  id: string,
): InboxOutcome {
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

function reportThrow(call: () => void, item: InboxItem): void {
  try {
    call();
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    process.emitWarning(
      `turnlog store: an inbox subscriber of session ${item.sessionId} threw on request ${item.id} (${reason}); the request stays pending until it is settled`,
      { code: 'TURNLOG_LISTENER_ERROR' },
    );
  }
}
