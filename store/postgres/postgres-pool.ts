import {
  openPool,
  type PgPool,
  type PgPoolClient,
  type PgRow,
  type PostgresSchema,
  type PostgresTimeouts,
} from './postgres-connection.ts';
import { StoreOpenError } from './postgres-errors.ts';
import { migrate } from './postgres-migrations.ts';

/**
 * The pool every part of `postgresStore` works through: on first use it opens the real one (the
 * caller's, or a new `pg.Pool`) and migrates the schema; an open that failed is tried again by
 * the next call (the database may be back). `close` ends the pool only if the store made it.
 */
export class StorePool implements PgPool {
  readonly #pool: PgPool | undefined;
  readonly #connectionString: string | undefined;
  readonly #schema: PostgresSchema;
  readonly #timeouts: Required<PostgresTimeouts>;
  // The connections of the pool the store made, to drop when the database never says goodbye.
  readonly #clients = new Set<PgPoolClient>();
  #opening: Promise<{ pool: PgPool; owned: boolean }> | undefined;

  constructor(options: {
    pool: PgPool | undefined;
    connectionString: string | undefined;
    schema: PostgresSchema;
    timeouts: Required<PostgresTimeouts>;
  }) {
    this.#pool = options.pool;
    this.#connectionString = options.connectionString;
    this.#schema = options.schema;
    this.#timeouts = options.timeouts;
  }

  /** The store's time bounds. */
  get timeouts(): Required<PostgresTimeouts> {
    return this.#timeouts;
  }

  async query(
    text: string,
    values?: unknown[],
  ): Promise<{ rows: PgRow[]; rowCount: number | null }> {
    return (await this.#open()).query(text, values);
  }

  async connect(): Promise<PgPoolClient> {
    return (await this.#open()).connect();
  }

  /** A no-op: the parts never end the store's pool; the store's `close` does (`close` below). */
  async end(): Promise<void> {}

  /**
   * Ends the pool the store made, once an open in flight has settled; never the caller's. A
   * database that does not answer (wedged, stopped) gets `closeMs`: then the pool's connections
   * are dropped without a goodbye, and `close` returns.
   */
  async close(): Promise<void> {
    const opened = await withinMs(
      this.#opening?.catch(() => undefined),
      this.#timeouts.closeMs,
    );
    if (opened === 'late') {
      // Still connecting to a database that does not answer: the connect timeout ends it.
      return;
    }
    if (opened?.owned !== true) return;
    const ended = await withinMs(
      opened.pool.end().catch(() => {}),
      this.#timeouts.closeMs,
    );
    if (ended === 'late') for (const client of this.#clients) destroySocket(client);
  }

  #open(): Promise<PgPool> {
    this.#opening ??= this.#connect().catch((error: unknown) => {
      // The next call tries again (the database may be back).
      this.#opening = undefined;
      throw error;
    });
    return this.#opening.then(({ pool }) => pool);
  }

  async #connect(): Promise<{ pool: PgPool; owned: boolean }> {
    const schema = this.#schema.name;
    const opened = await openPool({
      pool: this.#pool,
      connectionString: this.#connectionString,
      schema,
      timeouts: this.#timeouts,
    });
    if (opened.owned) this.#trackClients(opened.pool);
    try {
      await migrate(opened.pool, this.#schema);
      return opened;
    } catch (error) {
      if (opened.owned) await opened.pool.end().catch(() => {});
      if (StoreOpenError.isInstance(error)) throw error;
      throw new StoreOpenError({
        message: `postgresStore: could not open schema ${schema} (${(error as Error)?.message}); check the connection string or pool, that the database is up, and that the role may CREATE in it`,
        schema,
        cause: error,
      });
    }
  }

  /** Keeps the connections of the store's own pool, to drop on a `close` the database ignores. */
  #trackClients(pool: PgPool): void {
    pool.on?.('connect', (client) => this.#clients.add(client));
    pool.on?.('remove', (client) => this.#clients.delete(client));
  }
}

/** Resolves with the promise's value, or `'late'` once `ms` passed first. */
async function withinMs<T>(promise: Promise<T> | undefined, ms: number): Promise<T | 'late'> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<'late'>((resolve) => {
    timer = setTimeout(() => resolve('late'), ms);
  });
  try {
    return await Promise.race([promise as Promise<T>, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Drops a node-postgres connection's socket: its pending work fails, the pool lets it go. */
function destroySocket(client: PgPoolClient): void {
  const socket = (client as { connection?: { stream?: { destroy?: () => void } } }).connection
    ?.stream;
  socket?.destroy?.();
}
