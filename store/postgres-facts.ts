import type { Fact, NewFact } from '../events/facts.ts';
import type { AppendResult } from './event-store.ts';
import {
  onConnection,
  type PgPool,
  type PgQueryable,
  type PgRow,
  type PostgresSchema,
  sqlLiteral,
} from './postgres-connection.ts';
import { checkLeases, leaseColumns, leaseStateOf } from './postgres-leases.ts';
import type { RunLeaseState } from './run-leases.ts';
import { freshFacts, sequenceFacts, storedFactProblem } from './session-log.ts';

/**
 * Appends checked facts (`validateNewFacts`' output) to a session in one transaction, with the
 * rules every store shares (`freshFacts`, `sequenceFacts`) applied to the state read under the
 * session row's lock, and the lease check (fencing) in the same transaction. Two round trips:
 *
 *   BEGIN;                                                       -- one message, each statement
 *   INSERT the session row if missing (ON CONFLICT DO NOTHING);  -- with its own snapshot
 *   SELECT last_seq … FOR UPDATE;                                -- appends to a session queue here
 *   SELECT known ids, ended runs, the runs' leases (FOR SHARE: a takeover waits for us)
 *     → nothing new: ROLLBACK, a no-op (a retried append; a new session leaves no row)
 *     → lease check, expectedSeq, sealed runs: a throw is a ROLLBACK
 *   INSERT facts, move last_seq, update the runs index, release the leases of runs that ended,
 *   NOTIFY (delivered only once committed);  COMMIT            -- one message
 *
 * Values travel as SQL literals (`sqlLiteral`): the simple query protocol, which alone takes
 * several statements in one message, has no parameters.
 */
export function appendFacts(options: {
  pool: PgPool;
  schema: PostgresSchema;
  sessionId: string;
  candidates: NewFact[];
  expectedSeq: number | undefined;
  where: string;
}): Promise<AppendResult> {
  const { schema, sessionId, candidates, where } = options;
  return onConnection(options.pool, async (client) => {
    const state = await lockedState(client, schema, sessionId, candidates);
    const known = new Set(state.known);
    const fresh = freshFacts(candidates, (id) => known.has(id));
    if (fresh.length === 0) {
      await client.query('ROLLBACK');
      return { appended: [], lastSeq: state.lastSeq };
    }
    checkLeases({ where, sessionId, fresh, leases: state.leases });
    const ended = new Set(state.ended);
    const appended = sequenceFacts(fresh, {
      where,
      sessionId,
      expectedSeq: options.expectedSeq,
      lastSeq: state.lastSeq,
      isEnded: (runId) => ended.has(runId),
    });
    await client.query(`${writeFacts(schema, sessionId, appended)}; COMMIT`);
    return { appended, lastSeq: state.lastSeq + appended.length };
  });
}

async function lockedState(
  client: PgQueryable,
  schema: PostgresSchema,
  sessionId: string,
  candidates: readonly NewFact[],
): Promise<{
  lastSeq: number;
  known: string[];
  ended: string[];
  leases: Map<string, RunLeaseState>;
}> {
  const session = sqlLiteral(sessionId);
  const ids = sqlLiteral(JSON.stringify(candidates.map((fact) => fact.id)));
  const runIds = sqlLiteral(JSON.stringify([...new Set(candidates.map((fact) => fact.runId))]));
  const results = (await client.query(
    `BEGIN;
     INSERT INTO ${schema.sql}.sessions (session_id, last_seq) VALUES (${session}, 0)
       ON CONFLICT (session_id) DO NOTHING;
     SELECT last_seq FROM ${schema.sql}.sessions WHERE session_id = ${session} FOR UPDATE;
     WITH leased AS (
       SELECT ${leaseColumns()} FROM ${schema.sql}.leases
       WHERE session_id = ${session} AND run_id IN (SELECT json_array_elements_text(${runIds}::json))
       FOR SHARE
     )
     SELECT
       array(SELECT id FROM ${schema.sql}.facts WHERE session_id = ${session}
             AND id IN (SELECT json_array_elements_text(${ids}::json))) AS known,
       array(SELECT run_id FROM ${schema.sql}.runs WHERE session_id = ${session}
             AND run_id IN (SELECT json_array_elements_text(${runIds}::json))
             AND ended_seq IS NOT NULL) AS ended,
       coalesce((SELECT json_agg(leased) FROM leased), '[]'::json) AS leases`,
  )) as unknown as { rows: PgRow[] }[];
  const locked = results[2]?.rows[0];
  const row = results[3]?.rows[0] as { known: string[]; ended: string[]; leases: PgRow[] };
  return {
    lastSeq: Number(locked?.last_seq ?? 0),
    known: row.known,
    ended: row.ended,
    leases: new Map(row.leases.map((lease) => [String(lease.run_id), leaseStateOf(lease)])),
  };
}

/** The statement that stores `appended`, moves `last_seq`, updates the runs index and notifies. */
function writeFacts(schema: PostgresSchema, sessionId: string, appended: readonly Fact[]): string {
  const session = sqlLiteral(sessionId);
  const lastSeq = appended.at(-1)?.seq ?? 0;
  const facts = appended.map((fact) => ({
    seq: fact.seq,
    id: fact.id,
    run_id: fact.runId,
    type: fact.type,
    worker_id: fact.workerId ?? null,
    lease_epoch: fact.leaseEpoch ?? null,
    body: JSON.stringify(fact),
  }));
  const runs = runChanges(appended);
  const endedRuns = runs.filter((run) => run.ended_seq !== null).map((run) => run.run_id);
  return `WITH inserted AS (
      INSERT INTO ${schema.sql}.facts (session_id, seq, id, run_id, type, worker_id, lease_epoch, body)
      SELECT ${session}, f.seq, f.id, f.run_id, f.type, f.worker_id, f.lease_epoch, f.body::json
      FROM json_to_recordset(${sqlLiteral(JSON.stringify(facts))}::json)
        AS f(seq int, id text, run_id text, type text, worker_id text, lease_epoch int, body text)
    ), session AS (
      UPDATE ${schema.sql}.sessions SET last_seq = ${lastSeq} WHERE session_id = ${session}
    ), run_index AS (
      INSERT INTO ${schema.sql}.runs (session_id, run_id, turn_id, started_seq, ended_seq)
      SELECT ${session}, r.run_id, r.turn_id, r.started_seq, r.ended_seq
      FROM json_to_recordset(${sqlLiteral(JSON.stringify(runs))}::json)
        AS r(run_id text, turn_id text, started_seq int, ended_seq int)
      ON CONFLICT (session_id, run_id) DO UPDATE SET
        started_seq = coalesce(runs.started_seq, excluded.started_seq),
        ended_seq = coalesce(runs.ended_seq, excluded.ended_seq)
    ), released AS (
      -- An ended run is driven by nobody: its lease goes with its run.ended (I7).
      UPDATE ${schema.sql}.leases SET worker_id = NULL, expires_at = clock_timestamp()
      WHERE session_id = ${session}
        AND run_id IN (SELECT json_array_elements_text(${sqlLiteral(JSON.stringify(endedRuns))}::json))
    )
    SELECT pg_notify(${sqlLiteral(schema.channel)}, 'f:' || md5(${session}) || ':${lastSeq}')`;
}

/** What an append changes in the runs index: one entry per run it starts or ends. */
function runChanges(appended: readonly Fact[]) {
  const runs = new Map<
    string,
    { run_id: string; turn_id: string; started_seq: number | null; ended_seq: number | null }
  >();
  for (const fact of appended) {
    if (fact.type !== 'run.started' && fact.type !== 'run.ended') continue;
    const run = runs.get(fact.runId) ?? {
      run_id: fact.runId,
      turn_id: fact.turnId,
      started_seq: null,
      ended_seq: null,
    };
    if (fact.type === 'run.started') run.started_seq ??= fact.seq;
    else run.ended_seq = fact.seq;
    runs.set(fact.runId, run);
  }
  return [...runs.values()];
}

/**
 * The session's stored facts from `fromSeq` on, each checked to be a fact of this session in its
 * place (`storedFactProblem`). Returns the first problem instead of a shortened log.
 */
export async function readFacts(options: {
  db: PgQueryable;
  schema: PostgresSchema;
  sessionId: string;
  fromSeq: number;
}): Promise<{ facts: Fact[]; problem: string | undefined }> {
  const { schema, sessionId } = options;
  const fromSeq = Math.max(options.fromSeq, 1);
  const { rows } = await options.db.query(
    `SELECT seq, body::text AS body FROM ${schema.sql}.facts
     WHERE session_id = $1 AND seq >= $2 ORDER BY seq`,
    [sessionId, fromSeq],
  );
  const facts: Fact[] = [];
  for (const [index, row] of rows.entries()) {
    const seq = fromSeq + index;
    // The column is `json`: the server already refused anything that does not parse.
    const fact: unknown = JSON.parse(String(row.body));
    const problem =
      Number(row.seq) === seq
        ? storedFactProblem(fact, { sessionId, seq })
        : `seq ${String(row.seq)} is where seq ${seq} belongs: the log has a gap`;
    if (problem !== undefined) return { facts, problem };
    facts.push(fact as Fact);
  }
  return { facts, problem: undefined };
}
