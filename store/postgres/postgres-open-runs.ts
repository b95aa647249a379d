import type { OpenRun, StoreFinding } from '../event-store.ts';
import type { PgQueryable, PostgresSchema } from './postgres-connection.ts';

/**
 * The open runs of every session, with the log as the truth: one statement (one snapshot) reads
 * the runs index's open rows and the runs the facts leave open (a `run.started` with no
 * `run.ended`, from the partial index `facts_run_bounds`: two entries per run, never a scan of
 * every fact) and joins them. A session where the two disagree — a run the index leaves out, or
 * lists as open when its facts do not — is not answered: it gets an `unreadable` finding
 * (`recover()` reports it `damaged`), never a run skipped silently. Costs one index-only pass
 * over the runs ever started (bench/open-runs.ts); only `openRuns()` runs it, never a lease scan.
 * With `sessionIds`, only those sessions are read (retention's check, store/postgres/
 * postgres-retention.ts: a session is removed only when its log says every run of it ended).
 */
export async function readOpenRuns(
  db: PgQueryable,
  schema: PostgresSchema,
  options: { sessionIds?: readonly string[] } = {},
): Promise<{ runs: OpenRun[]; findings: StoreFinding[] }> {
  const { sessionIds } = options;
  const only = sessionIds === undefined ? '' : 'AND session_id = ANY($1::text[])';
  const { rows } = await db.query(
    `WITH indexed AS (
       SELECT session_id, run_id, turn_id, started_seq FROM ${schema.sql}.runs
       WHERE started_seq IS NOT NULL AND ended_seq IS NULL ${only}
     ), logged AS (
       SELECT session_id, run_id, min(seq) FILTER (WHERE type = 'run.started') AS started_seq
       FROM ${schema.sql}.facts WHERE type IN ('run.started', 'run.ended') ${only}
       GROUP BY session_id, run_id
       HAVING count(*) FILTER (WHERE type = 'run.ended') = 0
     )
     SELECT coalesce(i.session_id, l.session_id) AS session_id,
       coalesce(i.run_id, l.run_id) AS run_id, i.turn_id,
       i.started_seq AS indexed_seq, l.started_seq AS logged_seq
     FROM indexed i FULL JOIN logged l ON i.session_id = l.session_id AND i.run_id = l.run_id
     ORDER BY 1, coalesce(i.started_seq, l.started_seq)`,
    sessionIds === undefined ? [] : [sessionIds],
  );
  const findings = new Map<string, StoreFinding>();
  for (const row of rows) {
    const problem = disagreement(row, schema);
    const sessionId = String(row.session_id);
    if (problem === undefined || findings.has(sessionId)) continue;
    const file = `${schema.name}.runs`;
    const message = `postgresStore: session ${sessionId} in ${file}: ${problem}; the log is the truth, so the session is reported and left as it is: compare its rows in ${file} with its facts and correct the index row`;
    findings.set(sessionId, { sessionId, kind: 'unreadable', file, line: undefined, message });
  }
  const runs = rows
    .filter((row) => !findings.has(String(row.session_id)))
    .map((row) => ({
      sessionId: String(row.session_id),
      turnId: String(row.turn_id),
      runId: String(row.run_id),
    }));
  return { runs, findings: [...findings.values()] };
}

/** What is wrong with one joined row, in words; `undefined` when the index and the log agree. */
function disagreement(row: Record<string, unknown>, schema: PostgresSchema): string | undefined {
  const run = String(row.run_id);
  const facts = `${schema.name}.facts`;
  if (row.indexed_seq === null) {
    return `run ${run} is unfinished in ${facts} (its run.started is seq ${row.logged_seq}, with no run.ended) but the runs index does not list it as open`;
  }
  if (row.logged_seq === null) {
    return `the runs index lists run ${run} as open (started at seq ${row.indexed_seq}) but ${facts} has no run.started of it without a run.ended`;
  }
  if (Number(row.indexed_seq) !== Number(row.logged_seq)) {
    return `the runs index says run ${run} started at seq ${row.indexed_seq}, ${facts} at seq ${row.logged_seq}`;
  }
  return undefined;
}

/**
 * The unfinished runs a worker's `recover()` resumes (`RunLeases.unattendedRuns`), by index
 * only: the candidates are the held leases that expired (`leases_held`, bounded as the takeover
 * scan bounds it) and the runs started without a lease (`facts_unleased_starts`, migration 4:
 * appended without a token, or imported; none on a database only workers wrote to). Each is kept
 * when the log leaves it open (no `run.ended` in `facts_run_bounds`) and no lease stands in the
 * way (none released: its worker parked it; none live). A parked run costs this query nothing:
 * its lease is released and its `run.started` carries a token (issue 26, item 5).
 */
export async function readUnattendedRuns(
  db: PgQueryable,
  schema: PostgresSchema,
): Promise<OpenRun[]> {
  const { rows } = await db.query(unattendedRunsStatement(schema));
  return rows.map((row) => ({
    sessionId: String(row.session_id),
    turnId: String(row.turn_id),
    runId: String(row.run_id),
  }));
}

/** The statement of `readUnattendedRuns` (exported for its plan's test and the benchmark). */
export function unattendedRunsStatement(schema: PostgresSchema): string {
  return `WITH candidates AS (
       SELECT session_id, run_id FROM ${schema.sql}.leases
       WHERE worker_id IS NOT NULL AND expires_at <= statement_timestamp()
       UNION
       SELECT session_id, run_id FROM ${schema.sql}.facts
       WHERE type = 'run.started' AND worker_id IS NULL
     )
     SELECT started.session_id, started.run_id, started.body->>'turnId' AS turn_id
     FROM candidates c
     JOIN ${schema.sql}.facts started ON started.session_id = c.session_id
       AND started.run_id = c.run_id AND started.type = 'run.started'
     WHERE NOT EXISTS (
         SELECT 1 FROM ${schema.sql}.facts ended WHERE ended.session_id = c.session_id
           AND ended.run_id = c.run_id AND ended.type = 'run.ended')
       AND NOT EXISTS (
         SELECT 1 FROM ${schema.sql}.leases lease WHERE lease.session_id = c.session_id
           AND lease.run_id = c.run_id
           AND (lease.worker_id IS NULL OR lease.expires_at > clock_timestamp()))
     ORDER BY started.session_id, started.seq`;
}
