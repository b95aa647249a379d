// Fills a PostgreSQL schema with parked runs for bench/million-parked.ts, in SQL: one run is
// parked through a worker runtime first (the template), then its rows — facts, the runs index,
// the released lease, the session — are copied `count` times with generate_series, ids renamed
// per session, so every copy is a real parked run a decision moves on.
import pg from 'pg';
import { z } from 'zod';
import { scriptedModel } from '../adapters/scripted-model.ts';
import { createRuntime } from '../runtime.ts';
import { postgresStore } from '../store/postgres/postgres-store.ts';
import { defineTool } from '../tools/define-tool.ts';

/** The tools of every parked run: one tool that asks a person first. */
export function parkedTools() {
  return {
    work: defineTool({
      description: 'Does a job, once a person allowed it.',
      inputSchema: z.object({ job: z.string() }),
      permission: 'ask',
      execute: ({ job }) => `done: ${job}`,
    }),
  };
}

/** The model of the template run: one call, then (after the decision) the answer. */
export function parkedModel(firstStep: boolean) {
  const answer = { text: 'Done.' };
  return scriptedModel(
    firstStep
      ? [{ text: 'Let me.', toolCalls: [{ name: 'work', input: { job: 'j1' } }] }, answer]
      : [answer],
  );
}

/** The session id of parked run `n` (0 … count − 1). */
export function parkedSession(n: number): string {
  return `parked-${n}`;
}

const template = 'million-template';

/** How many sessions one INSERT copies (one statement per table per batch). */
const batch = 100_000;

/**
 * Drops and refills `schema` with `count` parked runs, each waiting for a decision on `call_1`
 * with its lease released (what a worker leaves when it parks a run). Returns how long it took.
 */
export async function fillParked(
  pool: pg.Pool,
  connectionString: string,
  schema: string,
  count: number,
  onProgress: (line: string) => void = () => {},
): Promise<number> {
  const started = performance.now();
  await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await parkTemplate(connectionString, schema);
  const { rows } = await pool.query(
    `SELECT run_id, turn_id FROM ${schema}.runs WHERE session_id = $1`,
    [template],
  );
  const runId = String(rows[0]?.run_id);
  const turnId = String(rows[0]?.turn_id);
  for (let from = 0; from < count; from += batch) {
    const to = Math.min(count, from + batch) - 1;
    await copyTemplate(pool, schema, { from, to, runId, turnId });
    onProgress(`filled ${to + 1} of ${count} parked runs in ${schema}`);
  }
  for (const table of ['facts', 'runs', 'leases', 'sessions']) {
    await pool.query(`DELETE FROM ${schema}.${table} WHERE session_id = $1`, [template]);
  }
  await pool.query(
    `VACUUM ANALYZE ${schema}.facts, ${schema}.runs, ${schema}.leases, ${schema}.sessions`,
  );
  return performance.now() - started;
}

/** Parks the template run through a worker runtime, which writes every row a parked run leaves. */
async function parkTemplate(connectionString: string, schema: string): Promise<void> {
  const store = postgresStore({ connectionString, schema });
  const runtime = createRuntime({
    model: parkedModel(true),
    tools: parkedTools(),
    store,
    worker: { id: 'million-seed', leaseMs: 15_000 },
  });
  const turn = await runtime.send({ sessionId: template, text: 'Please do job j1.' });
  for await (const event of turn.events) if (event.type === 'tool.permission.requested') break;
  // close() waits for the parking queued on the session: its lease is released (to nobody).
  await runtime.close();
  const check = new pg.Client({ connectionString });
  await check.connect();
  try {
    const { rows } = await check.query(
      `SELECT worker_id FROM ${schema}.leases WHERE session_id = $1`,
      [template],
    );
    if (rows.length !== 1 || rows[0]?.worker_id !== null) {
      throw new Error(
        `million-fill: the template run's lease is ${JSON.stringify(rows)}, not released`,
      );
    }
  } finally {
    await check.end();
  }
}

/** Copies the template's rows to sessions `from` … `to`, renaming session, run and turn ids. */
async function copyTemplate(
  pool: pg.Pool,
  schema: string,
  ids: { from: number; to: number; runId: string; turnId: string },
): Promise<void> {
  const { from, to, runId, turnId } = ids;
  const sessions = `generate_series($1::int, $2::int) AS n`;
  const session = `'parked-' || n`;
  const values = [from, to, template];
  await pool.query(
    `INSERT INTO ${schema}.facts (session_id, seq, id, run_id, type, worker_id, lease_epoch, body)
     SELECT ${session}, f.seq, f.id, f.run_id || '-' || n, f.type, f.worker_id, f.lease_epoch,
       replace(replace(replace(f.body::text,
         '"sessionId":"' || $3 || '"', '"sessionId":"' || ${session} || '"'),
         '"runId":"' || $4 || '"', '"runId":"' || $4 || '-' || n || '"'),
         '"turnId":"' || $5 || '"', '"turnId":"' || $5 || '-' || n || '"')::json
     FROM ${sessions}, ${schema}.facts f WHERE f.session_id = $3`,
    [...values, runId, turnId],
  );
  await pool.query(
    `INSERT INTO ${schema}.runs (session_id, run_id, turn_id, started_seq, ended_seq)
     SELECT ${session}, r.run_id || '-' || n, r.turn_id || '-' || n, r.started_seq, r.ended_seq
     FROM ${sessions}, ${schema}.runs r WHERE r.session_id = $3`,
    values,
  );
  await pool.query(
    `INSERT INTO ${schema}.leases (session_id, run_id, worker_id, epoch, expires_at)
     SELECT ${session}, l.run_id || '-' || n, l.worker_id, l.epoch, l.expires_at
     FROM ${sessions}, ${schema}.leases l WHERE l.session_id = $3`,
    values,
  );
  await pool.query(
    `INSERT INTO ${schema}.sessions (session_id, last_seq)
     SELECT ${session}, s.last_seq FROM ${sessions}, ${schema}.sessions s WHERE s.session_id = $3`,
    values,
  );
}
