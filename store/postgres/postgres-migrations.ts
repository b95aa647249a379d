import { inTransaction, type PgPool, type PostgresSchema } from './postgres-connection.ts';
import { StoreOpenError } from './postgres-errors.ts';

/**
 * `append_facts(parts, bodies, channel)`: the write of one or more appends (postgres-facts.ts
 * `appendParts`), each part a session, in the one transaction of the statement that calls it.
 * Per part, in the order given (the caller sorts by session, so every batch locks in one order):
 * the session row (created for a part that expects seq 0) FOR UPDATE, then its runs' lease rows
 * FOR KEY SHARE (a takeover waits for the commit, a renewal of their holder does not); then the belief — last seq as expected, no fact id
 * stored, no run ended, each run's lease as its facts' token says, `live` judged as of the
 * statement's arrival — and only where it holds (or the part says `w`: the exact path checked it
 * under these locks already) the facts, `last_seq`, the runs index, the release of ended runs'
 * leases, and the part's notification (sent only once committed; the store sends no payload `p`
 * since issue 26, item 3: `writeParts` notifies each written part's session channel in the
 * statement that calls this function). Returns per part whether it
 * wrote. The parts are jsonb (small); the bodies one text parameter, the facts' JSON joined by
 * U+0001 (never in `JSON.stringify`'s output): each body is parsed once, as it is stored.
 */
const appendFactsFunction = `CREATE FUNCTION $schema.append_facts(parts jsonb, bodies text, channel text)
  RETURNS boolean[] LANGUAGE plpgsql AS $fn$
DECLARE
  texts text[] := string_to_array(bodies, chr(1));
  part jsonb;
  sid text;
  expected integer;
  fact_count integer;
  used integer := 0;
  holds boolean;
  written boolean[] := '{}';
BEGIN
  FOR part IN SELECT value FROM jsonb_array_elements(parts) LOOP
    sid := part->>'s';
    expected := (part->>'e')::integer;
    fact_count := jsonb_array_length(part->'f');
    IF expected = 0 THEN
      INSERT INTO $schema.sessions (session_id, last_seq) VALUES (sid, 0)
        ON CONFLICT (session_id) DO NOTHING;
    END IF;
    PERFORM FROM $schema.sessions WHERE session_id = sid FOR UPDATE;
    PERFORM count(*) FROM (
      SELECT FROM $schema.leases WHERE session_id = sid
        AND run_id IN (SELECT r->>0 FROM jsonb_array_elements(part->'r') AS r)
      FOR KEY SHARE) AS locked;
    holds := (part->>'w') IS NOT NULL OR (
      (SELECT last_seq FROM $schema.sessions WHERE session_id = sid) = expected
      AND NOT EXISTS (SELECT FROM $schema.facts WHERE session_id = sid
        AND id IN (SELECT f->>1 FROM jsonb_array_elements(part->'f') AS f))
      AND NOT EXISTS (SELECT FROM $schema.runs WHERE session_id = sid
        AND run_id IN (SELECT r->>0 FROM jsonb_array_elements(part->'r') AS r)
        AND ended_seq IS NOT NULL)
      AND NOT EXISTS (
        SELECT FROM jsonb_array_elements(part->'r') AS r
        LEFT JOIN $schema.leases AS lease ON lease.session_id = sid AND lease.run_id = r->>0
        WHERE (CASE WHEN r->>1 IS NULL
          THEN NOT (lease.worker_id IS NOT NULL AND lease.expires_at > statement_timestamp())
          ELSE lease.worker_id IS NOT NULL AND lease.expires_at > statement_timestamp()
            AND lease.worker_id = r->>1 AND lease.epoch = (r->>2)::integer
          END) IS NOT TRUE));
    IF holds THEN
      INSERT INTO $schema.facts (session_id, seq, id, run_id, type, worker_id, lease_epoch, body)
        SELECT sid, (f->>0)::integer, f->>1, f->>2, f->>3, f->>4, (f->>5)::integer,
          texts[used + n::integer]::json
        FROM jsonb_array_elements(part->'f') WITH ORDINALITY AS x(f, n);
      UPDATE $schema.sessions SET last_seq = (part->>'l')::integer WHERE session_id = sid;
      IF jsonb_array_length(part->'c') > 0 THEN
        INSERT INTO $schema.runs AS runs (session_id, run_id, turn_id, started_seq, ended_seq)
          SELECT sid, c->>0, c->>1, (c->>2)::integer, (c->>3)::integer
          FROM jsonb_array_elements(part->'c') AS c
        ON CONFLICT (session_id, run_id) DO UPDATE SET
          started_seq = coalesce(runs.started_seq, excluded.started_seq),
          ended_seq = coalesce(runs.ended_seq, excluded.ended_seq);
        -- An ended run is driven by nobody: its lease goes with its run.ended (I7).
        UPDATE $schema.leases SET worker_id = NULL, expires_at = clock_timestamp()
          WHERE session_id = sid AND run_id IN (
            SELECT c->>0 FROM jsonb_array_elements(part->'c') AS c WHERE c->>3 IS NOT NULL);
      END IF;
      IF part->>'p' IS NOT NULL THEN
        PERFORM pg_notify(channel, part->>'p');
      END IF;
    END IF;
    written := written || holds;
    used := used + fact_count;
  END LOOP;
  RETURN written;
END $fn$`;

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
    name: 'append_facts: the appends of several sessions in one statement, planned once per connection',
    statements: [appendFactsFunction],
  },
  {
    version: 4,
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
