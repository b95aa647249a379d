import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { TurnlogError } from '../../events/turnlog-error.ts';
import type { LeaseRenewalThread, LeaseRenewer } from '../run-leases.ts';
import {
  openPool,
  type PgPool,
  type PostgresTimeouts,
  postgresSchema,
} from './postgres-connection.ts';
import { StoreUnavailableError } from './postgres-errors.ts';
import { PostgresLeases } from './postgres-leases.ts';

/** What a renewal thread of `postgresStore` connects with (copied into the thread). */
export interface PostgresRenewerOptions {
  /** The store's; `undefined`: the `PG*` variables, which the thread's `process.env` copies. */
  connectionString: string | undefined;
  schema: string;
  timeouts: Required<PostgresTimeouts>;
}

/**
 * The renewal thread of a `postgresStore` that made its own pool (`leaseRenewalThread`): this
 * module, in the file form (`.ts` or `.js`) this one was loaded from, and the store's connection
 * settings. A pool of the caller's cannot be copied into a thread: then `undefined`.
 */
export function postgresRenewalThread(options: {
  pool: PgPool | undefined;
  connectionString: string | undefined;
  schema: string;
  timeouts: Required<PostgresTimeouts>;
}): LeaseRenewalThread | undefined {
  if (options.pool !== undefined) return undefined;
  const extension = extname(fileURLToPath(import.meta.url));
  const renewerOptions: PostgresRenewerOptions = {
    connectionString: options.connectionString,
    schema: options.schema,
    timeouts: options.timeouts,
  };
  return {
    module: new URL(`./postgres-lease-renewer${extension}`, import.meta.url).href,
    options: renewerOptions,
  };
}

/**
 * Opens a renewer in a renewal thread: a pool of its own (one connection is all it uses, one
 * renewal at a time), `renewLeases` exactly as the store's (the same statement and fencing:
 * worker id and epoch), node-postgres's errors as `StoreUnavailableError`. The schema is not
 * migrated here: the store that asked for the thread opens it.
 */
export async function openLeaseRenewer(options: PostgresRenewerOptions): Promise<LeaseRenewer> {
  const schema = postgresSchema(options.schema);
  const { pool } = await openPool({
    pool: undefined,
    connectionString: options.connectionString,
    schema: schema.name,
    timeouts: options.timeouts,
  });
  const leases = new PostgresLeases(pool, schema);
  return {
    async renewLeases(request) {
      try {
        return await leases.renewLeases(request);
      } catch (error) {
        if (TurnlogError.isTurnlogError(error)) throw error;
        throw new StoreUnavailableError({
          message: `postgresStore.renewLeases (the renewal thread): the database did not answer (${(error as Error)?.message ?? String(error)}); it may or may not have renewed the leases; the next renewal tries again`,
          cause: error,
          method: 'renewLeases',
          mayBeRecorded: true,
          retrySafe: true,
        });
      }
    },
    async close() {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const late = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, options.timeouts.closeMs);
      });
      await Promise.race([pool.end().catch(() => {}), late]);
      clearTimeout(timer);
    },
  };
}
