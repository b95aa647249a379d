import type { Fact, NewFact } from '../../events/facts.ts';
import type { AppendResult } from '../event-store.ts';
import type { RunLeaseState } from '../run-leases.ts';
import { freshFacts, sequenceFacts, storedFactProblem } from '../session-log.ts';
import { type AppendBatches, type AppendPart, writeParts } from './postgres-append-batches.ts';
import {
  onConnection,
  type PgPool,
  type PgQueryable,
  type PgRow,
  type PostgresSchema,
  sqlLiteral,
} from './postgres-connection.ts';
import { checkLeases, leaseColumns, leaseStateOf } from './postgres-leases.ts';

/**
 * Appends checked facts (`validateNewFacts`' output) to a session in one transaction, with the
 * rules every store shares (`freshFacts`, `sequenceFacts`) and the lease check (fencing,
 * `checkLeases`) applied to the state read under the session row's lock. Every write goes
 * through `append_facts` (the function of migration 3, postgres-append-batches.ts `writeParts`):
 * values as parameters, its statements planned once per connection.
 *
 * The fast path: an append with `expectedSeq` is first decided by those same rules on the state
 * its driver believes in (`believedAppend`: last seq = `expectedSeq`, its ids new, its runs open,
 * each run's lease as its facts' tokens say), and handed to `batches` (`AppendBatches`), which
 * sends it with the other sessions' appends ready at the same moment in one statement, one
 * transaction, one round trip. The function takes the session row FOR UPDATE, then the runs'
 * leases FOR KEY SHARE (a takeover waits for us), and writes the part (facts, `last_seq`, the runs
 * index, the leases of runs that ended, NOTIFY) only WHERE the database finds that very state.
 *
 * When the belief does not hold nothing of that part was written, and the append goes the exact
 * path below, which decides every outcome — ConcurrencyError, RunSealedError, LeaseLostError,
 * RunLeasedError, the no-op of known ids — as before:
 *
 *   BEGIN; INSERT the session row if missing (ON CONFLICT DO NOTHING); SELECT last_seq … FOR
 *   UPDATE; SELECT known ids, ended runs, the runs' leases (FOR KEY SHARE)  -- one message
 *     → nothing new: ROLLBACK, a no-op (a retried append; a new session leaves no row)
 *     → lease check, expectedSeq, sealed runs: a throw is a ROLLBACK
 *   SELECT append_facts(the part, checked); COMMIT   -- NOTIFY delivered only once committed
 *
 * The lease rows are locked FOR KEY SHARE, the weakest lock that still fences: a takeover locks
 * them FOR UPDATE (which waits for, or skips, ours), while its holder's renewal, an UPDATE of
 * `expires_at` alone (FOR NO KEY UPDATE), goes through during the append. Under FOR SHARE a 50 MB
 * append (seconds of parsing on the server) held the renewal off past a short lease, which had
 * lapsed by the time it committed (issue 26, defect 5).
 */
export async function appendFacts(options: {
  pool: PgPool;
  schema: PostgresSchema;
  sessionId: string;
  candidates: NewFact[];
  expectedSeq: number | undefined;
  where: string;
  /** The fast path's group commit; without it (tests comparing the paths), only the exact path. */
  batches: AppendBatches | undefined;
}): Promise<AppendResult> {
  const { schema, sessionId, candidates, where } = options;
  const believed = options.batches === undefined ? undefined : believedAppend(options);
  if (believed !== undefined && (await options.batches?.write(believed))) {
    return {
      appended: [...believed.appended],
      lastSeq: believed.lastSeq + believed.appended.length,
    };
  }
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
    const part = { sessionId, lastSeq: state.lastSeq, appended, tokens: new Map(), checked: true };
    await writeParts(client, schema, [part]);
    await client.query('COMMIT');
    return { appended, lastSeq: state.lastSeq + appended.length };
  });
}

/**
 * Decides the append with the shared rules (`freshFacts`, `checkLeases`, `sequenceFacts`) on the
 * state its driver believes in — last seq `expectedSeq`, none of the facts' ids stored, none of
 * their runs ended, and per run the lease its facts' token names (live with exactly that worker
 * and epoch; no token: no live lease) — or `undefined` when it cannot be: no `expectedSeq`, no
 * facts, an id twice, a run with facts under different tokens, or a refusal even in that state.
 * Those go the exact path, which decides them on the state it reads.
 */
function believedAppend(options: {
  sessionId: string;
  candidates: NewFact[];
  expectedSeq: number | undefined;
  where: string;
}): AppendPart | undefined {
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
  return { sessionId, lastSeq: expectedSeq, appended, tokens, checked: false };
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
       FOR KEY SHARE
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

/**
 * The session's last seq and the id of the fact there (0 and `undefined` for a session with none):
 * where a subscription starts, and what tells it the session was purged and started again.
 */
export async function readLastFact(
  db: PgQueryable,
  schema: PostgresSchema,
  sessionId: string,
): Promise<{ seq: number; id: string | undefined }> {
  const { rows } = await db.query(
    `SELECT s.last_seq, f.id FROM ${schema.sql}.sessions s
     LEFT JOIN ${schema.sql}.facts f ON f.session_id = s.session_id AND f.seq = s.last_seq
     WHERE s.session_id = $1`,
    [sessionId],
  );
  const id = rows[0]?.id;
  return { seq: Number(rows[0]?.last_seq ?? 0), id: id == null ? undefined : String(id) };
}

/** The id of the session's fact at `seq`, or `undefined` when it has none there. */
export async function readFactId(
  db: PgQueryable,
  schema: PostgresSchema,
  sessionId: string,
  seq: number,
): Promise<string | undefined> {
  const { rows } = await db.query(
    `SELECT id FROM ${schema.sql}.facts WHERE session_id = $1 AND seq = $2`,
    [sessionId, seq],
  );
  return rows[0] === undefined ? undefined : String(rows[0].id);
}
