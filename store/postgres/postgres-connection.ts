import { createHash } from 'node:crypto';
import { TurnlogError } from '../../events/turnlog-error.ts';
import { StoreInputError } from '../event-store.ts';
import { StoreOpenError } from './postgres-errors.ts';

/** A query result row, before the caller names its columns. */
export type PgRow = Record<string, unknown>;

/** The part of a node-postgres client (`pg.Client`, `pg.PoolClient`, `pg.Pool`) the store uses. */
export interface PgQueryable {
  query(text: string, values?: unknown[]): Promise<{ rows: PgRow[]; rowCount: number | null }>;
}

/** A client checked out of a pool (`pg.PoolClient`). */
export interface PgPoolClient extends PgQueryable {
  release(error?: Error | boolean): void;
  on(
    event: 'notification',
    listener: (message: { channel: string; payload?: string }) => void,
  ): unknown;
  on(event: 'error', listener: (error: Error) => void): unknown;
  on(event: 'end', listener: () => void): unknown;
}

/** The part of a `pg.Pool` the store uses: pass your own, or let the store make one. */
export interface PgPool extends PgQueryable {
  connect(): Promise<PgPoolClient>;
  end(): Promise<void>;
  /** A `pg.Pool`'s events: the store listens to `acquire` and `error` when the pool has them. */
  on?(event: 'acquire' | 'connect' | 'remove', listener: (client: PgPoolClient) => void): unknown;
  on?(event: 'error', listener: (error: Error) => void): unknown;
}

/**
 * Time bounds of the pool `postgresStore` makes (a pool of yours keeps its own settings; the
 * store bounds only its `close()` on it). Each in milliseconds; each default is what the store
 * uses when it is not given.
 */
export interface PostgresTimeouts {
  /** Opening a connection (TCP, TLS, authentication). Default 10,000. */
  connectMs?: number;
  /**
   * One statement, from sending it to its last row; the connection is then dropped (its state is
   * unknown), and the call rejects with `StoreUnavailableError`. Default 30,000: well above the
   * append of a 50 MB fact on a loaded machine.
   */
  queryMs?: number;
  /** An idle pooled connection is closed after this long. Default 10,000. */
  idleMs?: number;
  /** TCP keepalive probes start after a connection was silent this long. Default 10,000. */
  keepAliveMs?: number;
  /**
   * How long `close()` waits for the database (appends in flight, UNLISTEN, ending the pool's
   * connections) before it drops the connections it made without a goodbye. Default 5,000.
   */
  closeMs?: number;
}

/** The time bounds used when `timeouts` does not name them. */
export const defaultTimeouts: Required<PostgresTimeouts> = {
  connectMs: 10_000,
  queryMs: 30_000,
  idleMs: 10_000,
  keepAliveMs: 10_000,
  closeMs: 5_000,
};

/** Where the store keeps its tables, quoted for SQL, and its notification channel. */
export interface PostgresSchema {
  /** The schema's name as given. */
  name: string;
  /** `"name"`, quoted for SQL. */
  sql: string;
  /** The LISTEN/NOTIFY channel of this schema's stores. */
  channel: string;
}

/** Checks the `schema` option and derives its SQL spelling and notification channel. */
export function postgresSchema(name: unknown): PostgresSchema {
  // PostgreSQL cuts identifiers at 63 bytes: a longer name would silently name another schema.
  if (
    typeof name !== 'string' ||
    name === '' ||
    Buffer.byteLength(name) > 63 ||
    name.includes('\0')
  ) {
    throw new StoreInputError({
      message: `postgresStore: schema must be a non-empty name of at most 63 bytes, got ${JSON.stringify(name)}`,
      sessionId: undefined,
    });
  }
  return {
    name,
    sql: `"${name.replaceAll('"', '""')}"`,
    channel: `turnlog_${md5(name).slice(0, 24)}`,
  };
}

/** The hex MD5 of a text, as PostgreSQL's `md5()` computes it: how notifications name keys. */
export function md5(text: string): string {
  return createHash('md5').update(text, 'utf8').digest('hex');
}

/**
 * A pool for the store: the caller's (never ended by the store) or a new `pg.Pool`, with `pg`
 * imported only now, so importing turnlog never needs it.
 */
export async function openPool(options: {
  pool: PgPool | undefined;
  connectionString: string | undefined;
  schema: string;
  timeouts: Required<PostgresTimeouts>;
}): Promise<{ pool: PgPool; owned: boolean }> {
  if (options.pool !== undefined) {
    listenOnPool(options.pool);
    return { pool: options.pool, owned: false };
  }
  let pg: typeof import('pg').default;
  try {
    pg = (await import('pg')).default;
  } catch (error) {
    throw new StoreOpenError({
      message:
        'postgresStore: the pg package (node-postgres) could not be loaded; install it with `npm install pg`, or pass a pool of your own',
      schema: options.schema,
      cause: error,
    });
  }
  const { timeouts } = options;
  const pool = new pg.Pool({
    ...(options.connectionString === undefined
      ? {}
      : { connectionString: options.connectionString }),
    connectionTimeoutMillis: timeouts.connectMs,
    query_timeout: timeouts.queryMs,
    idleTimeoutMillis: timeouts.idleMs,
    keepAlive: true,
    keepAliveInitialDelayMillis: timeouts.keepAliveMs,
  }) as unknown as PgPool;
  listenOnPool(pool);
  return { pool, owned: true };
}

/**
 * Makes sure no connection event of the pool is ever an uncaught exception. An idle connection
 * the server closed is an 'error' of the pool (it drops the connection). A checked-out one gets
 * the store's listener in the pool's own `acquire` event, synchronously, before the pool removes
 * its idle listener: a listener added after `await pool.connect()` came too late when the
 * server's goodbye (57P01, a restart) arrived in the same packet as the connection's
 * ReadyForQuery, an uncaught 'error' that ended the worker process (issue 26, defect 2).
 */
function listenOnPool(pool: PgPool): void {
  if (typeof pool.on !== 'function') return;
  pool.on('error', () => {});
  pool.on('acquire', listenForErrors);
}

/**
 * Runs `work` in one transaction on one pooled connection: COMMIT when it resolves, ROLLBACK when
 * it throws. A connection that failed is destroyed rather than returned to the pool.
 */
export function inTransaction<T>(
  pool: PgPool,
  work: (client: PgQueryable) => Promise<T>,
): Promise<T> {
  return onConnection(pool, async (client) => {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  });
}

/**
 * Runs `work` on one pooled connection, which opens and ends its transaction itself; when it
 * throws, whatever transaction is open is rolled back. A connection that failed is destroyed
 * rather than returned to the pool.
 */
export async function onConnection<T>(
  pool: PgPool,
  work: (client: PgQueryable) => Promise<T>,
): Promise<T> {
  const client = await pool.connect();
  listenForErrors(client);
  let broken: Error | undefined;
  try {
    return await work(client);
  } catch (error) {
    // A connection that failed (cut, timed out: its state is unknown) is dropped, not asked
    // to ROLLBACK (on a wedged server that would wait a whole query timeout more).
    broken = isConnectionError(error) ? (error as Error) : undefined;
    // Outside a transaction ROLLBACK only warns; on a dead connection it fails: drop the client.
    if (broken === undefined) {
      await client.query('ROLLBACK').catch((rollbackError: Error) => {
        broken = rollbackError;
      });
    }
    throw error;
  } finally {
    client.release(broken);
  }
}

/** Pooled clients that have the store's 'error' listener (one each, however often checked out). */
const listened = new WeakSet<PgPoolClient>();

/**
 * A checked-out client whose connection ends (a killed backend, a restarted server) emits
 * 'error', and the pool listens only to idle ones: without a listener that is an uncaught
 * exception, which ends the process. The query in flight rejects with the same error, and the
 * caller reports that (a StoreWriteError for an append), so the event itself needs no handling.
 */
export function listenForErrors(client: PgPoolClient): void {
  if (listened.has(client)) return;
  listened.add(client);
  client.on('error', () => {});
}

/** True for an error of the connection itself (not an SQL error the server answered with). */
export function isConnectionError(error: unknown): boolean {
  // A rule the store enforces (ConcurrencyError, LeaseLostError, …) is thrown by its own code.
  if (TurnlogError.isTurnlogError(error)) return false;
  // Server errors carry a five-character SQLSTATE in `code`; socket errors carry E… codes or none.
  const code = (error as { code?: unknown } | undefined)?.code;
  return !(typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code));
}

/** Checks that each named argument of a store method is a non-empty string. */
export function checkIds(ids: Record<string, unknown>, method: string): void {
  for (const [name, value] of Object.entries(ids)) {
    if (typeof value !== 'string' || value === '') {
      throw new StoreInputError({
        message: `postgresStore.${method}: ${name} must be a non-empty string, got ${JSON.stringify(value) ?? String(value)}`,
        sessionId: typeof ids.sessionId === 'string' ? ids.sessionId : undefined,
      });
    }
  }
}

/**
 * A text as an SQL string literal (`E'…'` when it holds a backslash, so the server's
 * `standard_conforming_strings` does not matter), for the simple query protocol, which has no
 * parameters. Quotes and backslashes are doubled; nothing else is special in such a literal.
 */
export function sqlLiteral(text: string): string {
  const escaped = text.replaceAll("'", "''");
  return text.includes('\\') ? ` E'${escaped.replaceAll('\\', '\\\\')}'` : `'${escaped}'`;
}
