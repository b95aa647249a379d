import type { Fact } from '../../events/facts.ts';
import type { StoreFinding } from '../event-store.ts';
import { endedSessionOf } from '../retention/ended-session.ts';
import type { EndedSession, RemovedSession, SessionToRemove } from '../session-retention.ts';
import { writeParts } from './postgres-append-batches.ts';
import {
  inTransaction,
  onConnection,
  type PgPool,
  type PgQueryable,
  type PostgresSchema,
} from './postgres-connection.ts';
import { readOpenRuns } from './postgres-open-runs.ts';

/**
 * Sessions whose last fact is a `run.ended` and whose log leaves no run open, filtered by its
 * `at` with the rule every store shares (`endedSessionOf`: the time is compared in JavaScript, so
 * an `at` PostgreSQL cannot read never fails the query). The log is the truth: the candidates'
 * open runs are read as `openRuns()` reads them (`readOpenRuns`: the runs index checked against
 * the facts' `run.started`/`run.ended`), so a session whose index lost a run's row, or marks an
 * unfinished run ended, is never found; it is returned in `findings` instead.
 */
export async function endedSessions(options: {
  pool: PgPool;
  schema: PostgresSchema;
  endedBefore: Date;
}): Promise<{ sessions: EndedSession[]; findings: StoreFinding[] }> {
  const { pool, schema, endedBefore } = options;
  const { rows } = await pool.query(
    `SELECT s.session_id, s.last_seq, f.body->>'at' AS at
     FROM ${schema.sql}.sessions s
     JOIN ${schema.sql}.facts f ON f.session_id = s.session_id AND f.seq = s.last_seq
     WHERE s.last_seq > 0 AND f.type = 'run.ended'`,
  );
  const candidates = rows
    .map((row) =>
      endedSessionOf({
        sessionId: String(row.session_id),
        lastSeq: Number(row.last_seq),
        openRuns: 0,
        lastFact: { type: 'run.ended', at: String(row.at) },
        endedBefore,
      }),
    )
    .filter((session) => session !== undefined);
  const sessionIds = candidates.map((session) => session.sessionId);
  const { kept, findings } = await sessionsWithOpenRuns(pool, schema, sessionIds);
  const sessions = candidates
    .filter((session) => !kept.has(session.sessionId))
    .sort((left, right) => (left.sessionId < right.sessionId ? -1 : 1));
  return { sessions, findings };
}

/**
 * Of `sessionIds`, those the log (or the runs index) leaves a run open in, and the findings of
 * those where the two disagree (`readOpenRuns`, restricted to these sessions).
 */
async function sessionsWithOpenRuns(
  db: PgQueryable,
  schema: PostgresSchema,
  sessionIds: readonly string[],
): Promise<{ kept: Set<string>; findings: StoreFinding[] }> {
  if (sessionIds.length === 0) return { kept: new Set(), findings: [] };
  const { runs, findings } = await readOpenRuns(db, schema, { sessionIds });
  const kept = new Set([...runs, ...findings].map((item) => String(item.sessionId)));
  return { kept, findings };
}

/**
 * Removes the sessions still at their `lastSeq` with no open run in one transaction: their rows
 * are locked (in id order, so two purges never deadlock; an append to one of them waits, or is
 * waited for), checked, and deleted from every table — facts, runs index, leases, inbox, partial
 * snapshots, the session row — so each is whole or gone. "No open run" is the log's word, checked
 * as `openRuns()` checks it: a session whose runs index disagrees with its facts is
 * `unreadable` (left, and returned in `findings` as `openRuns()` reports it), one with an
 * unfinished run `changed`.
 */
export function removeSessions(options: {
  pool: PgPool;
  schema: PostgresSchema;
  sessions: readonly SessionToRemove[];
}): Promise<{ outcomes: RemovedSession[]; findings: StoreFinding[] }> {
  const { pool, schema, sessions } = options;
  const ids = sessions.map((session) => session.sessionId);
  return inTransaction(pool, async (client) => {
    const locked = await client.query(
      `SELECT session_id, last_seq FROM ${schema.sql}.sessions
       WHERE session_id = ANY($1::text[]) ORDER BY session_id FOR UPDATE`,
      [ids],
    );
    // Read after the locks: every append committed before them is seen.
    const { runs, findings } = await readOpenRuns(client, schema, { sessionIds: ids });
    const lastSeqs = new Map(
      locked.rows.map((row) => [String(row.session_id), Number(row.last_seq)]),
    );
    const withOpenRuns = new Set(runs.map((run) => run.sessionId));
    const disagreeing = new Set(findings.map((finding) => String(finding.sessionId)));
    const outcomes = sessions.map(({ sessionId, lastSeq }): RemovedSession => {
      const stored = lastSeqs.get(sessionId) ?? 0;
      if (stored === 0) return { sessionId, outcome: 'absent' };
      if (disagreeing.has(sessionId)) return { sessionId, outcome: 'unreadable' };
      if (stored !== lastSeq || withOpenRuns.has(sessionId))
        return { sessionId, outcome: 'changed' };
      return { sessionId, outcome: 'removed' };
    });
    const removed = outcomes
      .filter((item) => item.outcome === 'removed')
      .map((item) => item.sessionId);
    if (removed.length > 0) {
      const tables = ['facts', 'runs', 'leases', 'inbox', 'partials'];
      await client.query(
        `WITH ${tables
          .map(
            (table) =>
              `${table}_gone AS (DELETE FROM ${schema.sql}.${table} WHERE session_id = ANY($1::text[]))`,
          )
          .join(', ')}
         DELETE FROM ${schema.sql}.sessions WHERE session_id = ANY($1::text[])`,
        [removed],
      );
    }
    return { outcomes, findings };
  });
}

/**
 * Stores a whole session in one transaction, as an append of every fact would (facts, `last_seq`,
 * runs index, a notification), but keeping the facts' own `seq` and lease tokens and without the
 * lease check: they are history, not a driver's work. `'exists'` when the session has facts.
 */
export function importFacts(options: {
  pool: PgPool;
  schema: PostgresSchema;
  sessionId: string;
  facts: readonly Fact[];
}): Promise<'imported' | 'exists'> {
  const { pool, schema, sessionId, facts } = options;
  return onConnection(pool, async (client) => {
    await client.query('BEGIN');
    await client.query(
      `INSERT INTO ${schema.sql}.sessions (session_id, last_seq) VALUES ($1, 0)
       ON CONFLICT (session_id) DO NOTHING`,
      [sessionId],
    );
    const { rows } = await client.query(
      `SELECT last_seq FROM ${schema.sql}.sessions WHERE session_id = $1 FOR UPDATE`,
      [sessionId],
    );
    if (Number(rows[0]?.last_seq ?? 0) > 0) {
      await client.query('ROLLBACK');
      return 'exists';
    }
    const tokens = new Map();
    await writeParts(client, schema, [
      { sessionId, lastSeq: 0, appended: facts, tokens, checked: true },
    ]);
    await client.query('COMMIT');
    return 'imported';
  });
}
