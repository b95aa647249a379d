import {
  openPool,
  type PgPool,
  type PgPoolClient,
  type PgRow,
  type PostgresSchema,
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
  #opening: Promise<{ pool: PgPool; owned: boolean }> | undefined;

  constructor(options: {
    pool: PgPool | undefined;
    connectionString: string | undefined;
    schema: PostgresSchema;
  }) {
    this.#pool = options.pool;
    this.#connectionString = options.connectionString;
    this.#schema = options.schema;
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

  /** Ends the pool the store made, once an open in flight has settled; never the caller's. */
  async close(): Promise<void> {
    const opened = await this.#opening?.catch(() => undefined);
    if (opened?.owned === true) await opened.pool.end();
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
    });
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
}
