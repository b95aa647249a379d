import type { Fact, NewFact } from '../../events/facts.ts';
import type { AppendResult } from '../event-store.ts';
import type { RunLeaseState } from '../run-leases.ts';
import { freshFacts, sequenceFacts, storedFactProblem } from '../session-log.ts';
import {
  onConnection,
  type PgPool,
  type PgQueryable,
  type PgRow,
  type PostgresSchema,
  sqlLiteral,
} from './postgres-connection.ts';
import { checkLeases, leaseColumns, leaseStateOf } from './postgres-leases.ts';
import { notificationChannel } from './postgres-notifications.ts';

/**
 * Appends checked facts (`validateNewFacts`' output) to a session in one transaction, with the
 * rules every store shares (`freshFacts`, `sequenceFacts`) and the lease check (fencing,
 * `checkLeases`) applied to the state read under the session row's lock.
 *
 * The fast path, one round trip: an append with `expectedSeq` is first decided by those same
 * rules on the state its driver believes in (`believedAppend`: last seq = `expectedSeq`, its ids
 * new, its runs open, each run's lease as its facts' tokens say), and sent in one message that
 * writes only if the database finds the session in exactly that state, under the same locks:
 *
 *   BEGIN;                                                       -- one message, each statement
 *   INSERT the session row if missing (only for expectedSeq 0);  -- with its own snapshot
 *   SELECT … FOR UPDATE the session row;                         -- appends to a session queue here
 *   WITH leased (the runs' leases, FOR SHARE: a takeover waits for us), belief (does the state
 *     read now equal the believed one?) INSERT facts, move last_seq, update the runs index,
 *     release the leases of runs that ended, NOTIFY — each only WHERE the belief holds;
 *   COMMIT
 *
 * When the belief does not hold nothing was written (the empty transaction commits), and the
 * append goes the exact path below, which decides every outcome — ConcurrencyError,
 * RunSealedError, LeaseLostError, RunLeasedError, the no-op of known ids — as before. Two round
 * trips:
 *
 *   BEGIN; INSERT the session row if missing (ON CONFLICT DO NOTHING); SELECT last_seq … FOR
 *   UPDATE; SELECT known ids, ended runs, the runs' leases (FOR SHARE)
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
  /** Only the exact path (tests compare the two paths' outcomes with it). */
  exactOnly?: boolean;
}): Promise<AppendResult> {
  const { schema, sessionId, candidates, where } = options;
  return onConnection(options.pool, async (client) => {
    const believed = options.exactOnly === true ? undefined : believedAppend(options);
    if (believed !== undefined && (await appendIfBelieved(client, schema, sessionId, believed))) {
      return { appended: believed.appended, lastSeq: believed.lastSeq + believed.appended.length };
    }
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

/**
 * The session as an append's driver believes it is, and what the shared rules make of the append
 * in that state: last seq `lastSeq` (its `expectedSeq`), none of the facts' ids stored, none of
 * their runs ended, and per run the lease its facts' token names (`token`: live with exactly that
 * worker and epoch; `undefined`: no live lease).
 */
interface BelievedAppend {
  lastSeq: number;
  appended: Fact[];
  /** Per run of the append, the token its facts carry (`undefined`: none). */
  tokens: Map<string, { workerId: string | undefined; epoch: number | undefined }>;
}

/**
 * Decides the append with the shared rules (`freshFacts`, `checkLeases`, `sequenceFacts`) on the
 * state its driver believes in, or `undefined` when it cannot be: no `expectedSeq`, no facts, an
 * id twice, a run with facts under different tokens, or a refusal even in that state. Those go the
 * exact path, which decides them on the state it reads.
 */
function believedAppend(options: {
  sessionId: string;
  candidates: NewFact[];
  expectedSeq: number | undefined;
  where: string;
}): BelievedAppend | undefined {
  const { sessionId, candidates, expectedSeq, where } = options;
  if (expectedSeq === undefined || candidates.length === 0) return undefined;
  const fresh = freshFacts(candidates, () => false);
  if (fresh.length !== candidates.length) return undefined;
  const tokens = new Map<string, { workerId: string | undefined; epoch: number | undefined }>();
  for (const fact of fresh) {
    const token = tokens.get(fact.runId);
    if (token === undefined)
      tokens.set(fact.runId, { workerId: fact.workerId, epoch: fact.leaseEpoch });
    else if (token.workerId !== fact.workerId || token.epoch !== fact.leaseEpoch) return undefined;
  }
  const leases = new Map<string, RunLeaseState>();
  for (const [runId, { workerId, epoch }] of tokens) {
    if (workerId === undefined || epoch === undefined) continue;
    leases.set(runId, {
      sessionId,
      runId,
      workerId,
      epoch,
      expiresAtMs: Number.POSITIVE_INFINITY,
      live: true,
    });
  }
  let appended: Fact[];
  try {
    checkLeases({ where, sessionId, fresh, leases });
    appended = sequenceFacts(fresh, {
      where,
      sessionId,
      expectedSeq,
      lastSeq: expectedSeq,
      isEnded: () => false,
    });
  } catch {
    // Refused even as believed (a run ended twice in the batch): the exact path says so.
    return undefined;
  }
  return { lastSeq: expectedSeq, appended, tokens };
}

/**
 * The fast path: one message that takes the exact path's locks in its order (the session row
 * FOR UPDATE, then, in a new statement that sees every append committed before the lock, the
 * runs' leases FOR SHARE), compares the state it reads with the believed one, and writes and
 * notifies only if they are equal; then COMMIT. True when the facts were stored; false when
 * nothing was (the committed transaction wrote nothing, and the caller goes the exact path).
 */
async function appendIfBelieved(
  client: PgQueryable,
  schema: PostgresSchema,
  sessionId: string,
  believed: BelievedAppend,
): Promise<boolean> {
  const session = sqlLiteral(sessionId);
  const list = (texts: Iterable<string>) => [...texts].map(sqlLiteral).join(', ');
  const ids = list(believed.appended.map((fact) => fact.id));
  const runs = list(believed.tokens.keys());
  // Per run, the lease its facts' token names; `live` is leaseColumns' (the database's clock).
  const leases = [...believed.tokens].map(([runId, { workerId, epoch }]) =>
    workerId === undefined || epoch === undefined
      ? `NOT EXISTS (SELECT 1 FROM leased WHERE run_id = ${sqlLiteral(runId)} AND live)`
      : `EXISTS (SELECT 1 FROM leased WHERE run_id = ${sqlLiteral(runId)} AND live
                 AND worker_id = ${sqlLiteral(workerId)} AND epoch = ${epoch})`,
  );
  // A missing row is a last seq of 0: only an append that expects 0 creates it (and locks it).
  const create =
    believed.lastSeq === 0
      ? `INSERT INTO ${schema.sql}.sessions (session_id, last_seq) VALUES (${session}, 0)
       ON CONFLICT (session_id) DO NOTHING;`
      : '';
  // An AND may stop at any part that is not true, but a true one evaluated every part: when
  // `holds` is true, the count read (so locked FOR SHARE) every lease row of the runs.
  // `live` as of the message's arrival (statement_timestamp()), before the server parsed it:
  // the exact path too judges the lease before it sends the facts. A 50 MB fact took longer to
  // parse than a short lease, so it was refused by its own size (issue 26, defect 5). Safe: a
  // takeover meanwhile changed the epoch, and once the row is locked none can commit before us.
  const belief = `WITH leased AS MATERIALIZED (
      SELECT ${leaseColumns('', 'statement_timestamp()')} FROM ${schema.sql}.leases
      WHERE session_id = ${session} AND run_id IN (${runs})
      FOR SHARE
    ), belief AS MATERIALIZED (
      SELECT ((SELECT last_seq FROM ${schema.sql}.sessions WHERE session_id = ${session}) = ${believed.lastSeq}
        AND NOT EXISTS (SELECT 1 FROM ${schema.sql}.facts WHERE session_id = ${session} AND id IN (${ids}))
        AND NOT EXISTS (SELECT 1 FROM ${schema.sql}.runs WHERE session_id = ${session}
                        AND run_id IN (${runs}) AND ended_seq IS NOT NULL)
        AND (SELECT count(*) FROM leased) >= 0
        AND ${leases.join('\n        AND ')}) IS TRUE AS holds
    )`;
  const results = (await client.query(
    `BEGIN;
     ${create}
     SELECT FROM ${schema.sql}.sessions WHERE session_id = ${session} FOR UPDATE;
     ${writeFacts(schema, sessionId, believed.appended, { with: belief, when: '(SELECT holds FROM belief)' })};
     COMMIT`,
  )) as unknown as { rows: PgRow[] }[];
  // The write's result (before COMMIT's): its one row is the notification, sent when it wrote.
  return results.at(-2)?.rows.length === 1;
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
       SELECT ${leaseColumns('', 'statement_timestamp()')} FROM ${schema.sql}.leases
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

/**
 * The statement that stores `appended`, moves `last_seq`, updates the runs index and notifies;
 * with `guard`, after the guard's CTEs (`with`) and only where `when` is true, returning one row
 * when it wrote and none when it did not.
 */
export function writeFacts(
  schema: PostgresSchema,
  sessionId: string,
  appended: readonly Fact[],
  guard?: { with: string; when: string },
): string {
  const session = sqlLiteral(sessionId);
  const lastSeq = appended.at(-1)?.seq ?? 0;
  const nullable = (text: string | undefined, type: string) =>
    text === undefined ? `NULL::${type}` : text;
  const facts = appended.map(
    (fact) =>
      `(${fact.seq}, ${sqlLiteral(fact.id)}, ${sqlLiteral(fact.runId)}, ${sqlLiteral(fact.type)}, ${nullable(
        fact.workerId === undefined ? undefined : sqlLiteral(fact.workerId),
        'text',
      )}, ${nullable(fact.leaseEpoch === undefined ? undefined : String(fact.leaseEpoch), 'int')}, ${sqlLiteral(JSON.stringify(fact))}::json)`,
  );
  const runs = runChanges(appended);
  const endedRuns = runs
    .filter((run) => run.ended_seq !== null)
    .map((run) => sqlLiteral(run.run_id));
  const only = guard === undefined ? '' : ` AND ${guard.when}`;
  const where = guard === undefined ? '' : ` WHERE ${guard.when}`;
  const parts = [
    `inserted AS (
      INSERT INTO ${schema.sql}.facts (session_id, seq, id, run_id, type, worker_id, lease_epoch, body)
      SELECT ${session}, f.* FROM (VALUES ${facts.join(',\n        ')})
        AS f(seq, id, run_id, type, worker_id, lease_epoch, body)${where}
    )`,
    `session AS (
      UPDATE ${schema.sql}.sessions SET last_seq = ${lastSeq} WHERE session_id = ${session}${only}
    )`,
  ];
  if (runs.length > 0) {
    const values = runs.map(
      (run) =>
        `(${sqlLiteral(run.run_id)}, ${sqlLiteral(run.turn_id)}, ${nullable(run.started_seq?.toString(), 'int')}, ${nullable(run.ended_seq?.toString(), 'int')})`,
    );
    parts.push(`run_index AS (
      INSERT INTO ${schema.sql}.runs (session_id, run_id, turn_id, started_seq, ended_seq)
      SELECT ${session}, r.* FROM (VALUES ${values.join(', ')})
        AS r(run_id, turn_id, started_seq, ended_seq)${guard === undefined ? ' WHERE true' : where}
      ON CONFLICT (session_id, run_id) DO UPDATE SET
        started_seq = coalesce(runs.started_seq, excluded.started_seq),
        ended_seq = coalesce(runs.ended_seq, excluded.ended_seq)
    )`);
  }
  if (endedRuns.length > 0) {
    // An ended run is driven by nobody: its lease goes with its run.ended (I7).
    parts.push(`released AS (
      UPDATE ${schema.sql}.leases SET worker_id = NULL, expires_at = clock_timestamp()
      WHERE session_id = ${session} AND run_id IN (${endedRuns.join(', ')})${only}
    )`);
  }
  return `${guard === undefined ? 'WITH' : `${guard.with},`} ${parts.join(', ')}
    SELECT pg_notify(${sqlLiteral(notificationChannel(schema, 'f', sessionId))}, '${lastSeq}')${where}`;
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
