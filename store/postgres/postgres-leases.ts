import type { NewFact } from '../../events/facts.ts';
import { StoreInputError } from '../event-store.ts';
import {
  type LeaseAttempt,
  LeaseLostError,
  type RunLease,
  RunLeasedError,
  type RunLeaseState,
  type RunLeases,
} from '../run-leases.ts';
import {
  checkIds,
  inTransaction,
  type PgPool,
  type PgRow,
  type PostgresSchema,
} from './postgres-connection.ts';

/**
 * The columns of a lease row (of `table`, when the query names several) as `leaseStateOf` reads them. Every time is the database's clock
 * (`clock_timestamp()`, not the transaction's start), so all workers judge expiry by one clock;
 * `now` is the moment `live` is judged at (the fast append: when its message arrived).
 */
export function leaseColumns(table = '', now = 'clock_timestamp()'): string {
  const column = (name: string) => (table === '' ? name : `${table}.${name}`);
  return `${column('session_id')} AS session_id, ${column('run_id')} AS run_id,
    ${column('worker_id')} AS worker_id, ${column('epoch')} AS epoch,
    (extract(epoch FROM ${column('expires_at')}) * 1000)::float8 AS expires_at_ms,
    (${column('worker_id')} IS NOT NULL AND ${column('expires_at')} > ${now}) AS live`;
}

/** A lease row as `RunLeaseState`. */
export function leaseStateOf(row: PgRow): RunLeaseState {
  return {
    sessionId: String(row.session_id),
    runId: String(row.run_id),
    workerId: row.worker_id === null ? undefined : String(row.worker_id),
    epoch: Number(row.epoch),
    expiresAtMs: Number(row.expires_at_ms),
    live: row.live === true,
  };
}

function leaseFromRow(row: PgRow): RunLease {
  const { live: _live, workerId, ...rest } = leaseStateOf(row);
  return { ...rest, workerId: workerId ?? '' };
}

/**
 * Fencing, in the append's transaction (the rows are locked FOR KEY SHARE, so a takeover, which
 * locks them FOR UPDATE, waits for it, while the holder's renewal does not): a fact with `workerId`/`leaseEpoch` needs exactly that live lease; a fact without them
 * needs its run not to be held live by anyone.
 */
export function checkLeases(options: {
  where: string;
  sessionId: string;
  fresh: readonly NewFact[];
  leases: ReadonlyMap<string, RunLeaseState>;
}): void {
  const { where, sessionId } = options;
  for (const fact of options.fresh) {
    const current = options.leases.get(fact.runId);
    if (fact.workerId !== undefined && fact.leaseEpoch !== undefined) {
      const holds =
        current?.live === true &&
        current.workerId === fact.workerId &&
        current.epoch === fact.leaseEpoch;
      if (holds) continue;
      throw new LeaseLostError({
        message: `${where}: worker ${fact.workerId} appended fact ${fact.id} (${fact.type}) under epoch ${fact.leaseEpoch} of run ${fact.runId}'s lease, which it no longer holds (${describeLease(current)}); nothing was stored: stop driving this run`,
        sessionId,
        runId: fact.runId,
        workerId: fact.workerId,
        epoch: fact.leaseEpoch,
        current,
      });
    }
    if (current?.live === true) {
      throw new RunLeasedError({
        message: `${where}: run ${fact.runId} is driven by worker ${current.workerId} under a live lease (epoch ${current.epoch}), and fact ${fact.id} (${fact.type}) carries no lease; nothing was stored: send the request to that worker's inbox, or acquire the lease once it is released or expired`,
        sessionId,
        runId: fact.runId,
        holder: current,
      });
    }
  }
}

function describeLease(lease: RunLeaseState | undefined): string {
  if (lease === undefined) return 'the run has no lease';
  if (lease.workerId === undefined) return `it was released at epoch ${lease.epoch}`;
  const holder = `worker ${lease.workerId}, epoch ${lease.epoch}`;
  return lease.live ? `it is held by ${holder}` : `the lease of ${holder} expired`;
}

/** `clock_timestamp()` plus the milliseconds in `parameter`: a lease's end by the database's clock. */
function until(parameter: string): string {
  return `clock_timestamp() + make_interval(secs => ${parameter}::float8 / 1000)`;
}

/**
 * The takeover scan's statement (`$1` the worker, `$2` leaseMs, `$3` the limit), on the leases
 * table `table`. It reads expired leases only, by the partial index `leases_held` (held leases,
 * by expiry): a released lease (a parked run's) is not in that index, and
 * `expires_at <= statement_timestamp()` bounds the index scan to the leases expired when the
 * statement began. `clock_timestamp()` is volatile and cannot bound an index scan; as a filter
 * alone it made the scan read every held lease when fewer than `limit` had expired (issue 26,
 * item 5). Both are kept: a lease is taken only when it expired by the clock of the moment too.
 * SKIP LOCKED: two workers scanning at once take different runs instead of queueing.
 *
 * A worker does not take back a lease of its own until it has been expired for `leaseMs`: a
 * worker that could not renew in time (starved, cut off, its loop blocked) leaves its runs to the
 * others, which scan every `leaseMs / 4`, instead of taking each back at once, re-sending its
 * request, and lapsing again (issue 26, defect 5: three times, then the run ended
 * `failed/interrupted`). Alone, it takes them back then.
 */
export function takeOverStatement(table: string): string {
  return `WITH expired AS (
       SELECT session_id, run_id FROM ${table}
       WHERE worker_id IS NOT NULL AND expires_at <= statement_timestamp()
         AND expires_at <= clock_timestamp()
         AND (worker_id <> $1
              OR expires_at <= statement_timestamp() - make_interval(secs => $2::float8 / 1000))
       ORDER BY expires_at
       LIMIT $3
       FOR UPDATE SKIP LOCKED
     )
     UPDATE ${table} AS lease
     SET worker_id = $1, epoch = lease.epoch + 1, expires_at = ${until('$2')}
     FROM expired
     WHERE lease.session_id = expired.session_id AND lease.run_id = expired.run_id
     RETURNING ${leaseColumns('lease')}`;
}

/** The lease operations of `postgresStore` (see `RunLeases`), one statement or transaction each. */
export class PostgresLeases implements Omit<RunLeases, 'unattendedRuns'> {
  readonly #pool: PgPool;
  readonly #schema: PostgresSchema;
  readonly #table: string;

  constructor(pool: PgPool, schema: PostgresSchema) {
    this.#pool = pool;
    this.#schema = schema;
    this.#table = `${schema.sql}.leases`;
  }

  async acquireLease(options: {
    sessionId: string;
    runId: string;
    workerId: string;
    leaseMs: number;
  }): Promise<LeaseAttempt> {
    const { sessionId, runId, workerId } = options;
    checkIds({ sessionId, runId, workerId }, 'acquireLease');
    checkLeaseMs(options.leaseMs, 'acquireLease');
    const row = await this.#takeIfFree(options);
    if (row !== undefined) return { acquired: true, lease: leaseFromRow(row) };
    const holder = await this.leaseOf({ sessionId, runId });
    // Released or expired between the two statements: try again.
    if (holder === undefined || !holder.live) return this.acquireLease(options);
    return { acquired: false, holder };
  }

  async leaseOf(options: { sessionId: string; runId: string }): Promise<RunLeaseState | undefined> {
    checkIds({ sessionId: options.sessionId, runId: options.runId }, 'leaseOf');
    const { rows } = await this.#pool.query(
      `SELECT ${leaseColumns()} FROM ${this.#table} WHERE session_id = $1 AND run_id = $2`,
      [options.sessionId, options.runId],
    );
    return rows[0] === undefined ? undefined : leaseStateOf(rows[0]);
  }

  async renewLeases(options: {
    leases: readonly RunLease[];
    leaseMs: number;
  }): Promise<{ renewed: RunLease[]; lost: RunLease[] }> {
    checkLeaseMs(options.leaseMs, 'renewLeases');
    const leases = [...options.leases];
    for (const lease of leases) checkLease(lease, 'renewLeases');
    if (leases.length === 0) return { renewed: [], lost: [] };
    // An append's lock on a lease row (FOR KEY SHARE) lets this UPDATE through: a long append
    // does not hold its own lease's renewal off (issue 26, defect 5). A row locked otherwise (a
    // takeover in flight, FOR UPDATE; an inbox settlement, FOR SHARE) is skipped, not waited for:
    // a renewal waiting behind one lock let every other lease of the worker lapse. A skipped row
    // still live and still this worker's is `busy`: neither list.
    const { rows } = await this.#pool.query(
      `WITH mine AS (
         SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::int[])
           AS mine(session_id, run_id, worker_id, epoch)
       ), free AS (
         SELECT lease.session_id, lease.run_id FROM ${this.#table} AS lease
         JOIN mine ON lease.session_id = mine.session_id AND lease.run_id = mine.run_id
           AND lease.worker_id = mine.worker_id AND lease.epoch = mine.epoch
         FOR NO KEY UPDATE OF lease SKIP LOCKED
       ), renewed AS (
         UPDATE ${this.#table} AS lease SET expires_at = ${until('$5')}
         FROM free WHERE lease.session_id = free.session_id AND lease.run_id = free.run_id
           AND lease.expires_at > clock_timestamp()
         RETURNING ${leaseColumns('lease')}
       )
       SELECT renewed.*, false AS busy FROM renewed
       UNION ALL
       SELECT ${leaseColumns('lease')}, true AS busy FROM ${this.#table} AS lease
       JOIN mine ON lease.session_id = mine.session_id AND lease.run_id = mine.run_id
         AND lease.worker_id = mine.worker_id AND lease.epoch = mine.epoch
       WHERE lease.expires_at > clock_timestamp()
         AND NOT EXISTS (SELECT 1 FROM free
                         WHERE free.session_id = lease.session_id AND free.run_id = lease.run_id)`,
      [
        leases.map((lease) => lease.sessionId),
        leases.map((lease) => lease.runId),
        leases.map((lease) => lease.workerId),
        leases.map((lease) => lease.epoch),
        options.leaseMs,
      ],
    );
    const key = (lease: { sessionId: string; runId: string }) =>
      JSON.stringify([lease.sessionId, lease.runId]);
    const renewed = rows.filter((row) => row.busy !== true).map(leaseFromRow);
    const kept = new Set(rows.map((row) => key(leaseFromRow(row))));
    return { renewed, lost: leases.filter((lease) => !kept.has(key(lease))) };
  }

  async releaseLease(options: { lease: RunLease; handOver?: boolean }): Promise<boolean> {
    const { lease } = options;
    checkLease(lease, 'releaseLease');
    // Handing over keeps the holder and ends the lease now: an expired lease is up for takeover.
    const { rowCount } = await this.#pool.query(
      `UPDATE ${this.#table} SET expires_at = clock_timestamp()${options.handOver === true ? '' : ', worker_id = NULL'}
       WHERE session_id = $1 AND run_id = $2 AND worker_id = $3 AND epoch = $4
         AND expires_at > clock_timestamp()`,
      [lease.sessionId, lease.runId, lease.workerId, lease.epoch],
    );
    return rowCount === 1;
  }

  async takeOverExpiredLeases(options: {
    workerId: string;
    leaseMs: number;
    limit?: number;
  }): Promise<RunLease[]> {
    checkIds({ workerId: options.workerId }, 'takeOverExpiredLeases');
    checkLeaseMs(options.leaseMs, 'takeOverExpiredLeases');
    const limit = options.limit ?? 10;
    if (!Number.isInteger(limit) || limit < 1) {
      throw new StoreInputError({
        message: `postgresStore.takeOverExpiredLeases: limit must be a whole number >= 1, got ${String(limit)}`,
        sessionId: undefined,
      });
    }
    const { rows } = await this.#pool.query(takeOverStatement(this.#table), [
      options.workerId,
      options.leaseMs,
      limit,
    ]);
    return rows.map(leaseFromRow);
  }

  /** Inserts epoch 1, or takes the next epoch of a free lease; `undefined` while it is live. */
  #takeIfFree(options: {
    sessionId: string;
    runId: string;
    workerId: string;
    leaseMs: number;
  }): Promise<PgRow | undefined> {
    const { sessionId, runId, workerId, leaseMs } = options;
    return inTransaction(this.#pool, async (client) => {
      // The session's row lock, as an append takes it: a run's first lease (a new row, which an
      // append in flight could not have locked FOR SHARE) waits for that append to commit, so the
      // new holder reads it, and a later append sees the lease.
      await client.query(
        `INSERT INTO ${this.#schema.sql}.sessions AS session (session_id, last_seq) VALUES ($1, 0)
         ON CONFLICT (session_id) DO UPDATE SET last_seq = session.last_seq`,
        [sessionId],
      );
      const { rows } = await client.query(
        `INSERT INTO ${this.#table} AS lease (session_id, run_id, worker_id, epoch, expires_at)
         VALUES ($1, $2, $3, 1, ${until('$4')})
         ON CONFLICT (session_id, run_id) DO UPDATE
           SET worker_id = $3, epoch = lease.epoch + 1, expires_at = ${until('$4')}
           WHERE lease.worker_id IS NULL OR lease.expires_at <= clock_timestamp()
         RETURNING ${leaseColumns()}`,
        [sessionId, runId, workerId, leaseMs],
      );
      return rows[0];
    });
  }
}

function checkLeaseMs(leaseMs: unknown, method: string): void {
  if (typeof leaseMs !== 'number' || !Number.isInteger(leaseMs) || leaseMs < 1) {
    throw new StoreInputError({
      message: `postgresStore.${method}: leaseMs must be a whole number of milliseconds >= 1, got ${String(leaseMs)}`,
      sessionId: undefined,
    });
  }
}

function checkLease(lease: RunLease, method: string): void {
  checkIds({ sessionId: lease?.sessionId, runId: lease?.runId, workerId: lease?.workerId }, method);
  if (!Number.isInteger(lease.epoch) || lease.epoch < 1) {
    throw new StoreInputError({
      message: `postgresStore.${method}: a lease's epoch is a whole number >= 1, got ${String(lease.epoch)}; pass the lease acquireLease gave you`,
      sessionId: lease.sessionId,
    });
  }
}
