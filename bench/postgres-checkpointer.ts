// LangGraph's durable checkpointer for the benchmarks. Its SQLite saver needs better-sqlite3,
// which builds here against Node 20's headers (npm's nodedir) and fails to load under the
// project's Node 24 (NODE_MODULE_VERSION 115 vs 137), so the Postgres saver is used instead,
// against the machine's PostgreSQL.
import { PostgresSaver } from '@langchain/langgraph-checkpoint-postgres';
import pg from 'pg';

/** The connection: `TURNLOG_BENCH_PG` (a connection string) or 127.0.0.1:5432, database `test`. */
export function postgresConnection(): pg.PoolConfig {
  const url = process.env.TURNLOG_BENCH_PG;
  if (url !== undefined && url !== '') return { connectionString: url };
  return { host: '127.0.0.1', port: 5432, database: 'test', user: 'postgres' };
}

const tables = ['checkpoints', 'checkpoint_blobs', 'checkpoint_writes'] as const;

/** Bytes a thread's checkpoints take in Postgres. */
export interface CheckpointBytes {
  /** The thread's rows as stored (`pg_column_size` of each row; large values TOAST-compressed). */
  rows: number;
  /** The thread's payloads uncompressed: checkpoint and metadata JSON, blob and write bytes. */
  payload: number;
  /** The three tables on disk: heap, TOAST and indexes (`pg_total_relation_size`). */
  relations: number;
}

const payloadSql: Record<(typeof tables)[number], string> = {
  checkpoints: 'octet_length(checkpoint::text) + octet_length(metadata::text)',
  checkpoint_blobs: 'coalesce(octet_length(blob), 0)',
  checkpoint_writes: 'octet_length(blob)',
};

/**
 * Opens a `PostgresSaver` in its own schema (dropped and created anew), its connections tagged
 * `applicationName` when given, with helpers to
 * measure a thread's bytes and to empty the tables between measurements.
 */
export async function openPostgresCheckpointer(
  schema: string,
  options: { applicationName?: string } = {},
) {
  const pool = new pg.Pool({
    ...postgresConnection(),
    max: 10,
    // Tagged, and kept open, so a benchmark can find this saver's server backends and read their CPU.
    ...(options.applicationName === undefined
      ? {}
      : { application_name: options.applicationName, idleTimeoutMillis: 0 }),
  });
  await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await pool.query(`CREATE SCHEMA ${schema}`);
  const saver = new PostgresSaver(pool, undefined, { schema });
  await saver.setup();
  return {
    saver,
    /** The PostgreSQL server's version string. */
    async serverVersion(): Promise<string> {
      const result = await pool.query<{ version: string }>('SELECT version()');
      return result.rows[0]?.version.split(' on ')[0] ?? 'unknown';
    },
    /** Bytes of one thread's rows, and of the whole tables (meaningful after `truncate()`). */
    async bytes(threadId: string): Promise<CheckpointBytes> {
      let rows = 0;
      let payload = 0;
      let relations = 0;
      for (const table of tables) {
        const rowResult = await pool.query<{ bytes: string | null; payload: string | null }>(
          `SELECT sum(pg_column_size(t.*)) AS bytes, sum(${payloadSql[table]}) AS payload FROM ${schema}.${table} t WHERE thread_id = $1`,
          [threadId],
        );
        rows += Number(rowResult.rows[0]?.bytes ?? 0);
        payload += Number(rowResult.rows[0]?.payload ?? 0);
        const relationResult = await pool.query<{ bytes: string }>(
          'SELECT pg_total_relation_size($1::regclass) AS bytes',
          [`${schema}.${table}`],
        );
        relations += Number(relationResult.rows[0]?.bytes ?? 0);
      }
      return { rows, payload, relations };
    },
    /** Empties the checkpoint tables before a measurement (TRUNCATE gives their space back at once). */
    async truncate(): Promise<void> {
      for (const table of tables) await pool.query(`TRUNCATE ${schema}.${table}`);
    },
    async close(): Promise<void> {
      await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await pool.end();
    },
  };
}

export type PostgresCheckpointer = Awaited<ReturnType<typeof openPostgresCheckpointer>>;
