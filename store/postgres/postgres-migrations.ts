import { inTransaction, type PgPool, type PostgresSchema } from './postgres-connection.ts';
import { StoreOpenError } from './postgres-errors.ts';

/** One versioned step of the schema. Never edit a released one: add the next (old logs are sacred). */
interface Migration {
  version: number;
  name: string;
  /** Statements with `$schema` for the quoted schema name. */
  statements: string[];
}

/**
 * The schema's history. Facts keep their exact JSON text in a `json` column (not `jsonb`, which
 * reorders keys and refuses `\u0000`): a fact reads back byte for byte as it was appended. The
 * columns a query needs (ids, type, lease fields) are real columns next to it.
 */
export const migrations: readonly Migration[] = [
  {
    version: 1,
    name: 'facts, sessions, runs index, leases, inbox, partial snapshots',
    statements: [
      `CREATE TABLE $schema.sessions (
        session_id text PRIMARY KEY,
        last_seq integer NOT NULL
      )`,
      `CREATE TABLE $schema.facts (
        session_id text NOT NULL,
        seq integer NOT NULL,
        id text NOT NULL,
        run_id text NOT NULL,
        type text NOT NULL,
        worker_id text,
        lease_epoch integer,
        body json NOT NULL,
        PRIMARY KEY (session_id, seq),
        UNIQUE (session_id, id)
      )`,
      // One row per run: openRuns() reads its partial index, checked against facts_run_bounds.
      `CREATE TABLE $schema.runs (
        session_id text NOT NULL,
        run_id text NOT NULL,
        turn_id text NOT NULL,
        started_seq integer,
        ended_seq integer,
        PRIMARY KEY (session_id, run_id)
      )`,
      `CREATE INDEX runs_open ON $schema.runs (session_id, started_seq)
        WHERE started_seq IS NOT NULL AND ended_seq IS NULL`,
      `CREATE TABLE $schema.leases (
        session_id text NOT NULL,
        run_id text NOT NULL,
        worker_id text,
        epoch integer NOT NULL,
        expires_at timestamptz NOT NULL,
        PRIMARY KEY (session_id, run_id)
      )`,
      `CREATE INDEX leases_held ON $schema.leases (expires_at) WHERE worker_id IS NOT NULL`,
      `CREATE TABLE $schema.inbox (
        id text PRIMARY KEY,
        session_id text NOT NULL,
        run_id text NOT NULL,
        kind text NOT NULL,
        input json NOT NULL,
        posted_by text,
        posted_at timestamptz NOT NULL DEFAULT clock_timestamp(),
        outcome json,
        settled_at timestamptz
      )`,
      `CREATE INDEX inbox_pending ON $schema.inbox (session_id, posted_at, id) WHERE outcome IS NULL`,
      // Not durable by design (a display aid, never replayed): unlogged, emptied after a crash.
      `CREATE UNLOGGED TABLE $schema.partials (
        session_id text PRIMARY KEY,
        body json NOT NULL
      )`,
    ],
  },
  {
    version: 2,
    name: 'facts index of run starts and ends, to check the runs index against the log',
    statements: [
      // Two entries per run (never one per fact): openRuns() reads the runs the log leaves open
      // from it with an index-only pass and checks the runs index against them (issue 29, item 10).
      // IF NOT EXISTS: on a large facts table, an operator may build it first CONCURRENTLY.
      `CREATE INDEX IF NOT EXISTS facts_run_bounds ON $schema.facts (session_id, run_id, type, seq)
        WHERE type IN ('run.started', 'run.ended')`,
    ],
  },
  {
    version: 3,
    name: 'facts index of run starts without a lease, for a worker to recover runs by index',
    statements: [
      // The runs no worker ever leased (appended without a token, or imported): with the expired
      // leases (leases_held), all a worker's recover() reads, never every open run — a parked
      // run's lease is released and its run.started carries a token (issue 26, item 5). Empty
      // on a database only workers wrote to. IF NOT EXISTS: may be built first CONCURRENTLY.
      `CREATE INDEX IF NOT EXISTS facts_unleased_starts ON $schema.facts (session_id, run_id)
        WHERE type = 'run.started' AND worker_id IS NULL`,
    ],
  },
];

/**
 * Creates or upgrades the schema to the newest migration, in one transaction under an advisory
 * lock, so several processes opening at once run each migration once and none sees it half done.
 */
export async function migrate(pool: PgPool, schema: PostgresSchema): Promise<void> {
  await inTransaction(pool, async (client) => {
    // One lock per schema (hashed to the advisory lock's two int4 keys), held to COMMIT.
    await client.query(`SELECT pg_advisory_xact_lock(hashtext('turnlog.migrate'), hashtext($1))`, [
      schema.name,
    ]);
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema.sql}`);
    await client.query(
      `CREATE TABLE IF NOT EXISTS ${schema.sql}.migrations (
        version integer PRIMARY KEY,
        name text NOT NULL,
        applied_at timestamptz NOT NULL DEFAULT clock_timestamp()
      )`,
    );
    const { rows } = await client.query(
      `SELECT coalesce(max(version), 0) AS version FROM ${schema.sql}.migrations`,
    );
    const current = Number(rows[0]?.version ?? 0);
    const newest = migrations.at(-1)?.version ?? 0;
    if (current > newest) {
      throw new StoreOpenError({
        message: `postgresStore: schema ${schema.name} is at migration ${current}, written by a newer turnlog; this one knows migrations up to ${newest}: upgrade turnlog (never point an older one at it)`,
        schema: schema.name,
      });
    }
    for (const migration of migrations) {
      if (migration.version <= current) continue;
      for (const statement of migration.statements) {
        await client.query(statement.replaceAll('$schema', schema.sql));
      }
      await client.query(`INSERT INTO ${schema.sql}.migrations (version, name) VALUES ($1, $2)`, [
        migration.version,
        migration.name,
      ]);
    }
  });
}
