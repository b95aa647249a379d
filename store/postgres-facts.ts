import type { Fact, NewFact } from '../events/facts.ts';
import type { AppendResult } from './event-store.ts';
import {
  inTransaction,
  type PgPool,
  type PgQueryable,
  type PgRow,
  type PostgresSchema,
} from './postgres-connection.ts';
import { checkLeases, leaseColumns, leaseStateOf } from './postgres-leases.ts';
import type { RunLeaseState } from './run-leases.ts';
import { freshFacts, sequenceFacts, storedFactProblem } from './session-log.ts';

/**
 * Appends checked facts (`validateNewFacts`' output) to a session in one transaction, with the
 * rules every store shares (`freshFacts`, `sequenceFacts`) applied to the state read under the
 * session row's lock, and the lease check (fencing) in the same transaction:
 *
 *   BEGIN
 *   lock the session row (create it with the first fact)   -- appends to a session queue here
 *   read: which ids are known, which runs ended, the runs' leases (FOR SHARE: a takeover waits)
 *   nothing new → COMMIT, a no-op
 *   lease check, expectedSeq, sealed runs → a throw rolls everything back
 *   insert facts, move last_seq, update the runs index, release leases of runs that ended,
 *   NOTIFY (delivered only if the transaction commits)
 *   COMMIT
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
  return inTransaction(options.pool, async (client) => {
    const existing = await lockSession(client, schema, sessionId, { create: false });
    // A session exists once it has a fact: an append with nothing to store leaves no row.
    if (existing === undefined && candidates.length === 0) return { appended: [], lastSeq: 0 };
    const lastSeq =
      existing ?? (await lockSession(client, schema, sessionId, { create: true })) ?? 0;
    const runIds = [...new Set(candidates.map((fact) => fact.runId))];
    const state = await sessionState(client, schema, sessionId, candidates, runIds);
    const known = new Set(state.known);
    const fresh = freshFacts(candidates, (id) => known.has(id));
    if (fresh.length === 0) return { appended: [], lastSeq };
    checkLeases({ where, sessionId, fresh, leases: state.leases });
    const ended = new Set(state.ended);
    const appended = sequenceFacts(fresh, {
      where,
      sessionId,
      expectedSeq: options.expectedSeq,
      lastSeq,
      isEnded: (runId) => ended.has(runId),
    });
    await writeFacts(client, schema, sessionId, appended);
    return { appended, lastSeq: lastSeq + appended.length };
  });
}

/**
 * Locks the session's row and returns its last seq. Without the row: `undefined`, or with
 * `create` a new row (0) — or, when a concurrent first append created it meanwhile (the INSERT
 * waits for that transaction), the row it committed, locked.
 */
async function lockSession(
  client: PgQueryable,
  schema: PostgresSchema,
  sessionId: string,
  options: { create: boolean },
): Promise<number | undefined> {
  for (;;) {
    const { rows } = await client.query(
      `SELECT last_seq FROM ${schema.sql}.sessions WHERE session_id = $1 FOR UPDATE`,
      [sessionId],
    );
    if (rows[0] !== undefined) return Number(rows[0].last_seq);
    if (!options.create) return undefined;
    const inserted = await client.query(
      `INSERT INTO ${schema.sql}.sessions (session_id, last_seq) VALUES ($1, 0)
       ON CONFLICT (session_id) DO NOTHING RETURNING last_seq`,
      [sessionId],
    );
    if (inserted.rows[0] !== undefined) return 0;
  }
}

async function sessionState(
  client: PgQueryable,
  schema: PostgresSchema,
  sessionId: string,
  candidates: readonly NewFact[],
  runIds: string[],
): Promise<{ known: string[]; ended: string[]; leases: Map<string, RunLeaseState> }> {
  // A new statement after the lock: READ COMMITTED gives it a snapshot that sees every append
  // committed before ours got the lock.
  const { rows } = await client.query(
    `WITH leased AS (
       SELECT ${leaseColumns()} FROM ${schema.sql}.leases
       WHERE session_id = $1 AND run_id = ANY($3::text[]) FOR SHARE
     )
     SELECT
       array(SELECT id FROM ${schema.sql}.facts WHERE session_id = $1 AND id = ANY($2::text[])) AS known,
       array(SELECT run_id FROM ${schema.sql}.runs
             WHERE session_id = $1 AND run_id = ANY($3::text[]) AND ended_seq IS NOT NULL) AS ended,
       coalesce((SELECT json_agg(leased) FROM leased), '[]'::json) AS leases`,
    [sessionId, candidates.map((fact) => fact.id), runIds],
  );
  const row = rows[0] as { known: string[]; ended: string[]; leases: PgRow[] };
  return { known: row.known, ended: row.ended, leases: leaseMap(row.leases) };
}

function leaseMap(rows: PgRow[]): Map<string, RunLeaseState> {
  return new Map(rows.map((row) => [String(row.run_id), leaseStateOf(row)]));
}

async function writeFacts(
  client: PgQueryable,
  schema: PostgresSchema,
  sessionId: string,
  appended: readonly Fact[],
): Promise<void> {
  const lastSeq = appended.at(-1)?.seq ?? 0;
  const runs = runChanges(appended);
  await client.query(
    `WITH inserted AS (
       INSERT INTO ${schema.sql}.facts (session_id, seq, id, run_id, type, worker_id, lease_epoch, body)
       SELECT $1, f.seq, f.id, f.run_id, f.type, f.worker_id, f.lease_epoch, f.body::json
       FROM unnest($2::int[], $3::text[], $4::text[], $5::text[], $6::text[], $7::int[], $8::text[])
         AS f(seq, id, run_id, type, worker_id, lease_epoch, body)
     ), session AS (
       UPDATE ${schema.sql}.sessions SET last_seq = $9::int WHERE session_id = $1
     ), run_index AS (
       INSERT INTO ${schema.sql}.runs (session_id, run_id, turn_id, started_seq, ended_seq)
       SELECT $1, r.run_id, r.turn_id, r.started_seq, r.ended_seq
       FROM unnest($10::text[], $11::text[], $12::int[], $13::int[]) AS r(run_id, turn_id, started_seq, ended_seq)
       ON CONFLICT (session_id, run_id) DO UPDATE SET
         started_seq = coalesce(runs.started_seq, excluded.started_seq),
         ended_seq = coalesce(runs.ended_seq, excluded.ended_seq)
     ), released AS (
       -- An ended run is driven by nobody: its lease goes with its run.ended (I7).
       UPDATE ${schema.sql}.leases SET worker_id = NULL, expires_at = clock_timestamp()
       WHERE session_id = $1 AND run_id = ANY($14::text[])
     )
     SELECT pg_notify($15, 'f:' || md5($1) || ':' || ($9::int)::text)`,
    [
      sessionId,
      appended.map((fact) => fact.seq),
      appended.map((fact) => fact.id),
      appended.map((fact) => fact.runId),
      appended.map((fact) => fact.type),
      appended.map((fact) => fact.workerId ?? null),
      appended.map((fact) => fact.leaseEpoch ?? null),
      appended.map((fact) => JSON.stringify(fact)),
      lastSeq,
      runs.map((run) => run.runId),
      runs.map((run) => run.turnId),
      runs.map((run) => run.startedSeq),
      runs.map((run) => run.endedSeq),
      runs.filter((run) => run.endedSeq !== null).map((run) => run.runId),
      schema.channel,
    ],
  );
}

/** What an append changes in the runs index: one entry per run it starts or ends. */
function runChanges(appended: readonly Fact[]) {
  const runs = new Map<
    string,
    { runId: string; turnId: string; startedSeq: number | null; endedSeq: number | null }
  >();
  for (const fact of appended) {
    if (fact.type !== 'run.started' && fact.type !== 'run.ended') continue;
    const run = runs.get(fact.runId) ?? {
      runId: fact.runId,
      turnId: fact.turnId,
      startedSeq: null,
      endedSeq: null,
    };
    if (fact.type === 'run.started') run.startedSeq ??= fact.seq;
    else run.endedSeq = fact.seq;
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
    let fact: unknown;
    try {
      fact = JSON.parse(String(row.body));
    } catch (error) {
      return {
        facts,
        problem: `the fact at seq ${seq} is not valid JSON (${(error as Error).message})`,
      };
    }
    const problem =
      Number(row.seq) === seq
        ? storedFactProblem(fact, { sessionId, seq })
        : `seq ${String(row.seq)} is where seq ${seq} belongs: the log has a gap`;
    if (problem !== undefined) return { facts, problem };
    facts.push(fact as Fact);
  }
  return { facts, problem: undefined };
}
