import type pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { postgresSchema } from '../../../store/postgres/postgres-connection.ts';
import { unattendedRunsStatement } from '../../../store/postgres/postgres-open-runs.ts';
import type { PostgresStore } from '../../../store/postgres/postgres-store.ts';
import type { RunLease } from '../../../store/run-leases.ts';
import { testSchema } from '../../helpers/postgres.ts';
import { storeFacts } from '../store-facts.ts';
import { leaseMs, under } from './postgres-lease-fixture.ts';

// Issue 26, item 5: the runs a worker's recover() resumes, read by index (never every open run).
describe('postgresStore unattendedRuns', () => {
  let database: ReturnType<typeof testSchema>;
  let admin: pg.Pool;
  let store: PostgresStore;

  beforeEach(() => {
    database = testSchema('unattended');
    admin = database.pool();
    store = database.open();
  });

  afterEach(async () => {
    await admin.end();
    await database.drop();
  });

  /** A run of its own session started under a new lease of `w1`. */
  async function leased(sessionId: string): Promise<RunLease> {
    const attempt = await store.acquireLease({
      sessionId,
      runId: 'run_1',
      workerId: 'w1',
      leaseMs,
    });
    if (!attempt.acquired) throw new Error(`no lease of ${sessionId}`);
    await store.append(sessionId, [
      under(attempt.lease, storeFacts(sessionId).runStarted('f1', 'run_1')),
    ]);
    return attempt.lease;
  }

  it('lists the runs never leased and those whose held lease expired; never a parked (released), live or ended one', async () => {
    await store.append('never-leased', [storeFacts('never-leased').runStarted('f1', 'run_1')]);
    const ended = storeFacts('never-leased-ended');
    await store.append('never-leased-ended', [
      ended.runStarted('f1', 'run_1'),
      ended.runEnded('f2', 'run_1'),
    ]);
    await leased('live');
    await store.releaseLease({ lease: await leased('parked') });
    await store.releaseLease({ lease: await leased('handed-over'), handOver: true });
    await leased('dead');
    await admin.query(
      `UPDATE "${database.schema}".leases SET expires_at = clock_timestamp() - interval '1 second'
       WHERE session_id = 'dead'`,
    );
    // A run never leased, then parked by a worker that took it: left alone like any parked run.
    await store.append('imported-parked', [
      storeFacts('imported-parked').runStarted('f1', 'run_1'),
    ]);
    const taken = await store.acquireLease({
      sessionId: 'imported-parked',
      runId: 'run_1',
      workerId: 'w2',
      leaseMs,
    });
    if (!taken.acquired) throw new Error('not taken');
    await store.releaseLease({ lease: taken.lease });

    expect(await store.unattendedRuns()).toEqual([
      { sessionId: 'dead', turnId: 'turn_1', runId: 'run_1' },
      { sessionId: 'handed-over', turnId: 'turn_1', runId: 'run_1' },
      { sessionId: 'never-leased', turnId: 'turn_1', runId: 'run_1' },
    ]);
  });

  it('upgrades a schema at migration 3 to the index of runs started without a lease, on open', async () => {
    await store.append('never-leased', [storeFacts('never-leased').runStarted('f1', 'run_1')]);
    const indexes = async () =>
      (
        await admin.query(
          `SELECT indexname FROM pg_indexes WHERE schemaname = $1 AND indexname = 'facts_unleased_starts'`,
          [database.schema],
        )
      ).rows.length;
    // As a schema written before migration 4: no index, no row for it.
    await admin.query(`DROP INDEX "${database.schema}".facts_unleased_starts`);
    await admin.query(`DELETE FROM "${database.schema}".migrations WHERE version >= 4`);
    expect(await indexes()).toBe(0);
    const upgraded = database.open();
    expect(await upgraded.unattendedRuns()).toEqual([
      { sessionId: 'never-leased', turnId: 'turn_1', runId: 'run_1' },
    ]);
    expect(await indexes()).toBe(1);
    const { rows } = await admin.query(
      `SELECT version FROM "${database.schema}".migrations ORDER BY version`,
    );
    expect(rows.map((row) => row.version)).toEqual([1, 2, 3, 4]);
  });

  it('reads by index only: no sequential scan however many runs are parked (EXPLAIN ANALYZE)', async () => {
    await store.sessions();
    // 5,000 parked runs (a token on run.started, the lease released) and one never leased.
    await admin.query(
      `INSERT INTO "${database.schema}".leases (session_id, run_id, worker_id, epoch, expires_at)
       SELECT 'parked-' || n, 'run_1', NULL, 1, clock_timestamp() FROM generate_series(1, 5000) AS n`,
    );
    await admin.query(
      `INSERT INTO "${database.schema}".facts (session_id, seq, id, run_id, type, worker_id, lease_epoch, body)
       SELECT 'parked-' || n, 1, 'f1', 'run_1', 'run.started', 'w1', 1, '{"turnId":"turn_1"}'::json
       FROM generate_series(1, 5000) AS n`,
    );
    await store.append('never-leased', [storeFacts('never-leased').runStarted('f1', 'run_1')]);
    await admin.query(`ANALYZE "${database.schema}".leases, "${database.schema}".facts`);
    const { rows } = await admin.query(
      `EXPLAIN (ANALYZE, FORMAT JSON) ${unattendedRunsStatement(postgresSchema(database.schema))}`,
    );
    const plan: PlanNode = rows[0]['QUERY PLAN'][0].Plan;
    const scans = nodes(plan).filter((node) => node['Relation Name'] !== undefined);
    expect(scans.filter((node) => node['Node Type'] === 'Seq Scan')).toEqual([]);
    expect(Math.max(...scans.map((node) => node['Actual Rows'] ?? 0))).toBeLessThanOrEqual(1);
    expect(plan['Actual Rows']).toBe(1);
  });
});

/** One node of EXPLAIN (FORMAT JSON)'s plan. */
interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Actual Rows'?: number;
  Plans?: PlanNode[];
}

function nodes(node: PlanNode): PlanNode[] {
  return [node, ...(node.Plans ?? []).flatMap(nodes)];
}
