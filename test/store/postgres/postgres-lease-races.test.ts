import { describe, expect, it } from 'vitest';
import { LeaseLostError, type RunLease, RunLeasedError } from '../../../store/run-leases.ts';
import { storeFacts } from '../store-facts.ts';
import {
  gatedCommits,
  leaseMs,
  under,
  useLeaseFixture,
  waitForLockWait,
} from './postgres-lease-fixture.ts';

const a = storeFacts('session_a');

// The races of architecture/workers.md ("Leases and fencing"), each forced into one order.
describe('postgresStore leases: appends racing lease changes', () => {
  const f = useLeaseFixture();

  it('refuses an append of the old epoch that waited on the session while the run was taken over', async () => {
    const old = await f.acquired(f.w1, 'f.w1');
    await f.w1.append('session_a', [under(old, a.runStarted('f1', 'run_1'))]);
    // Another append holds the session's row: w1's next append waits for it inside its transaction.
    const blocker = await f.admin.connect();
    await blocker.query('BEGIN');
    await blocker.query(
      `SELECT 1 FROM "${f.database.schema}".sessions WHERE session_id = 'session_a' FOR UPDATE`,
    );
    const late = f.w1.append('session_a', [under(old, a.steering('f2', 'run_1'))]).then(
      () => 'stored',
      (error: unknown) => error,
    );
    await waitForLockWait(f.admin);
    await f.expire('session_a', 'run_1');
    const [taken] = await f.w2.takeOverExpiredLeases({ workerId: 'f.w2', leaseMs });
    await blocker.query('COMMIT');
    blocker.release();
    const outcome = await late;
    expect(LeaseLostError.isInstance(outcome)).toBe(true);
    expect(outcome).toMatchObject({ epoch: 1, current: { workerId: 'f.w2', epoch: taken?.epoch } });
    expect(await f.ids(f.w2)).toEqual(['f1']);
  });

  it.each([
    ['the fast path', { expectedSeq: 1 }],
    ['the exact path', {}],
  ])(
    'stores an append whose lease ran out while it waited on the session, nobody having taken the run (%s)',
    async (_path, options) => {
      // The lease is judged when the append's message arrived: a 50 MB fact took longer to reach
      // its lock than a short lease lasts, and was refused for its own size (issue 26, defect 5).
      const old = await f.acquired(f.w1, 'f.w1');
      await f.w1.append('session_a', [under(old, a.runStarted('f1', 'run_1'))]);
      const blocker = await f.admin.connect();
      await blocker.query('BEGIN');
      await blocker.query(
        `SELECT 1 FROM "${f.database.schema}".sessions WHERE session_id = 'session_a' FOR UPDATE`,
      );
      const late = f.w1.append('session_a', [under(old, a.steering('f2', 'run_1'))], options);
      await waitForLockWait(f.admin);
      // Runs out now: after the append's message arrived, before it reached the lease.
      await f.admin.query(
        `UPDATE "${f.database.schema}".leases SET expires_at = clock_timestamp() WHERE session_id = 'session_a'`,
      );
      expect((await f.w2.leaseOf({ sessionId: 'session_a', runId: 'run_1' }))?.live).toBe(false);
      await blocker.query('COMMIT');
      blocker.release();
      expect((await late).lastSeq).toBe(2);
      expect(await f.ids(f.w2)).toEqual(['f1', 'f2']);
    },
  );

  it('makes a takeover wait for an append of the old epoch that passed its lease check, so the new holder reads it', async () => {
    const gate = gatedCommits(f.database.url);
    const slow = f.database.open({ pool: gate.pool });
    const lease = (await slow.acquireLease({
      sessionId: 'session_a',
      runId: 'run_1',
      workerId: 'f.w1',
      leaseMs: 1_500,
    })) as { acquired: true; lease: RunLease };
    const order: string[] = [];
    gate.hold();
    const append = slow
      .append('session_a', [under(lease.lease, a.runStarted('f1', 'run_1'))])
      .then(() => order.push('f.w1 committed'));
    await gate.reached;
    // The lease runs out while the append waits to commit (the database's own clock).
    while ((await f.w2.leaseOf({ sessionId: 'session_a', runId: 'run_1' }))?.live) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(await f.w2.takeOverExpiredLeases({ workerId: 'f.w2', leaseMs })).toEqual([]);
    const acquire = f.w2
      .acquireLease({ sessionId: 'session_a', runId: 'run_1', workerId: 'f.w2', leaseMs })
      .then((attempt) => {
        order.push('f.w2 acquired');
        return attempt;
      });
    await waitForLockWait(f.admin);
    gate.release();
    await append;
    expect(await acquire).toMatchObject({ acquired: true, lease: { workerId: 'f.w2', epoch: 2 } });
    expect(order).toEqual(['f.w1 committed', 'f.w2 acquired']);
    expect(await f.ids(f.w2)).toEqual(['f1']);
    await gate.end();
  });

  it('renews every lease at once while an append holds one, that one too', async () => {
    // Issue 26, defect 5: the renewal waited behind a long append's lock on one lease row, and
    // every other lease of the worker lapsed meanwhile; then it skipped that row, whose lease
    // lapsed under a 50 MB append longer than the lease. The append locks it FOR KEY SHARE now.
    const gate = gatedCommits(f.database.url);
    const slow = f.database.open({ pool: gate.pool });
    const attempt = (sessionId: string) =>
      slow.acquireLease({ sessionId, runId: 'run_1', workerId: 'f.w1', leaseMs: 60_000 });
    const held = (await attempt('session_a')) as { acquired: true; lease: RunLease };
    const other = (await attempt('session_b')) as { acquired: true; lease: RunLease };
    gate.hold();
    const append = slow.append('session_a', [under(held.lease, a.runStarted('f1', 'run_1'))]);
    await gate.reached;
    const renewal = await f.w1.renewLeases({ leases: [held.lease, other.lease], leaseMs: 60_000 });
    expect(renewal.renewed.map((lease) => lease.sessionId).sort()).toEqual([
      'session_a',
      'session_b',
    ]);
    expect(renewal.lost).toEqual([]);
    // (A takeover still waits for the append, or skips its row: race 1's tests, above.)
    gate.release();
    await append;
    const after = await f.w1.renewLeases({ leases: [held.lease, other.lease], leaseMs: 60_000 });
    expect(after.renewed.map((lease) => lease.sessionId).sort()).toEqual([
      'session_a',
      'session_b',
    ]);
    await gate.end();
  });

  it("makes a run's first lease wait for an append without a lease in flight on the session", async () => {
    const gate = gatedCommits(f.database.url);
    const plain = f.database.open({ pool: gate.pool });
    await plain.sessions();
    const order: string[] = [];
    gate.hold();
    const append = plain
      .append('session_a', [a.runStarted('f1', 'run_1')])
      .then(() => order.push('appended'));
    await gate.reached;
    const acquire = f.w2
      .acquireLease({ sessionId: 'session_a', runId: 'run_1', workerId: 'f.w2', leaseMs })
      .then((attempt) => {
        order.push('acquired');
        return attempt;
      });
    await waitForLockWait(f.admin);
    gate.release();
    await append;
    expect(await acquire).toMatchObject({ acquired: true, lease: { epoch: 1 } });
    expect(order).toEqual(['appended', 'acquired']);
    // Once the lease is in place, an append without it is refused.
    await expect(plain.append('session_a', [a.steering('f2', 'run_1')])).rejects.toSatisfy(
      RunLeasedError.isInstance,
    );
    await gate.end();
  });
});
