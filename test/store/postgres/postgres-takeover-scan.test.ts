import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { takeOverStatement } from '../../../store/postgres/postgres-leases.ts';
import type { PostgresStore } from '../../../store/postgres/postgres-store.ts';
import { testSchema } from '../../helpers/postgres.ts';

/** One node of EXPLAIN (FORMAT JSON)'s plan. */
interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Index Cond'?: string;
  'Actual Rows'?: number;
  'Rows Removed by Filter'?: number;
  Plans?: PlanNode[];
}

function nodes(node: PlanNode): PlanNode[] {
  return [node, ...(node.Plans ?? []).flatMap(nodes)];
}

// Issue 26, item 5: a database holding many parked runs (their leases released) and a few runs
// in flight. The takeover scan must read the expired leases only, by index: not the released
// ones (a million parked runs), and not every live one either.
describe('postgresStore takeover scan', () => {
  const database = testSchema('scan');
  let store: PostgresStore;
  let admin: pg.Pool;
  const leases = () => `"${database.schema}".leases`;

  beforeAll(async () => {
    store = database.open();
    admin = database.pool();
    await store.sessions();
    await admin.query(
      `INSERT INTO ${leases()} (session_id, run_id, worker_id, epoch, expires_at)
       SELECT 'parked-' || n, 'run', NULL, 1, clock_timestamp() - interval '1 day'
         FROM generate_series(1, 20000) AS n
       UNION ALL SELECT 'live-' || n, 'run', 'w1', 1, clock_timestamp() + interval '1 hour'
         FROM generate_series(1, 300) AS n
       UNION ALL SELECT 'expired-' || n, 'run', 'w0', 3, clock_timestamp() - n * interval '1 second'
         FROM generate_series(1, 3) AS n`,
    );
    await admin.query(`ANALYZE ${leases()}`);
  });

  afterAll(async () => {
    await admin.end();
    await database.drop();
  });

  it('reads only the expired leases, by the index of held leases (EXPLAIN ANALYZE, rolled back)', async () => {
    const client = await admin.connect();
    let plan: PlanNode;
    try {
      await client.query('BEGIN');
      const { rows } = await client.query(
        `EXPLAIN (ANALYZE, FORMAT JSON) ${takeOverStatement(leases())}`,
        ['w2', 60_000, 10],
      );
      plan = rows[0]['QUERY PLAN'][0].Plan;
    } finally {
      await client.query('ROLLBACK');
      client.release();
    }
    const scans = nodes(plan).filter(
      (node) => node['Relation Name'] === 'leases' && node['Node Type'] !== 'ModifyTable',
    );
    const scan = scans.find((node) => node['Index Name'] !== 'leases_pkey');
    expect(scan).toMatchObject({
      'Node Type': 'Index Scan',
      'Index Name': 'leases_held',
      'Index Cond': expect.stringContaining('expires_at <='),
      'Actual Rows': 3,
    });
    // Before, the expiry was a filter only (clock_timestamp() cannot bound an index scan): with
    // fewer than `limit` expired, every live lease was read and thrown away.
    expect(scan?.['Rows Removed by Filter'] ?? 0).toBe(0);
  });

  it('takes over the expired leases, oldest first, and no released or live one', async () => {
    const taken = await store.takeOverExpiredLeases({ workerId: 'w2', leaseMs: 60_000 });
    expect(taken.map((lease) => [lease.sessionId, lease.workerId, lease.epoch])).toEqual([
      ['expired-3', 'w2', 4],
      ['expired-2', 'w2', 4],
      ['expired-1', 'w2', 4],
    ]);
    expect(await store.takeOverExpiredLeases({ workerId: 'w2', leaseMs: 60_000 })).toEqual([]);
  });
});
