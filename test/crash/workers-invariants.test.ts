import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Fact } from '../../events/facts.ts';
import { testSchema } from '../helpers/postgres.ts';
import { storeFacts } from '../store/store-facts.ts';
import { toolRun } from './tool-run.ts';
import {
  executorViolations,
  type LeaseGrant,
  leaseAuditSql,
  leaseViolations,
  type WorkerExecution,
  workersFinalViolations,
} from './workers-invariants.ts';

/** The workers campaign trusts these checks to see a violation: each one is shown one. */

/**
 * The run driven by w1 under epoch 1 up to seq 7, then (w1 paused, its lease expired) taken over
 * by w2 under epoch 2, granted when the session was at seq 7.
 */
function fencedRun(): { facts: Fact[]; grants: LeaseGrant[] } {
  const facts = toolRun().map((fact) =>
    fact.seq <= 7
      ? { ...fact, workerId: 'w1', leaseEpoch: 1 }
      : { ...fact, workerId: 'w2', leaseEpoch: 2 },
  );
  const grant = (workerId: string, epoch: number, lastSeq: number, previous?: string) => ({
    sessionId: 'session_1',
    runId: 'run_1',
    workerId,
    epoch,
    lastSeq,
    previousWorkerId: previous,
  });
  return { facts, grants: [grant('w1', 1, 0), grant('w2', 2, 7, 'w1')] };
}

const executed = (...calls: [string, string][]): WorkerExecution[] =>
  calls.map(([callId, workerId]) => ({
    sessionId: 'session_1',
    callId,
    tool: 'tool',
    workerId,
    pid: 7,
  }));

const withFact = (facts: Fact[], seq: number, change: Partial<Fact>): Fact[] =>
  facts.map((fact) => (fact.seq === seq ? ({ ...fact, ...change } as Fact) : fact));

describe('leaseViolations', () => {
  it('finds nothing in a run handed from w1 to w2 by a takeover', () => {
    const { facts, grants } = fencedRun();
    expect(leaseViolations(facts, grants)).toEqual([]);
    expect(
      workersFinalViolations({
        facts,
        executions: executed(['c1', 'w1'], ['c2', 'w1']),
        requests: 2,
        grants,
      }),
    ).toEqual([]);
  });

  it('names a fact without a lease token', () => {
    const { facts, grants } = fencedRun();
    const { workerId: _w, leaseEpoch: _e, ...bare } = facts[3] as Fact;
    const unfenced = facts.map((fact) => (fact.seq === 4 ? (bare as Fact) : fact));
    expect(leaseViolations(unfenced, grants)).toEqual([
      'lease: seq 4 tool.permission.decided of run run_1 carries no lease token (workerId/leaseEpoch)',
    ]);
  });

  it('names a fact under an epoch never granted, or granted to another worker', () => {
    const { facts, grants } = fencedRun();
    expect(leaseViolations(withFact(facts, 12, { leaseEpoch: 3 }), grants)).toEqual([
      'lease: seq 12 run.ended of run run_1 by w2 under epoch 3, which was never granted',
    ]);
    expect(leaseViolations(withFact(facts, 9, { workerId: 'w3' }), grants)).toEqual([
      'lease: seq 9 tool.settled of run run_1 by w3 under epoch 2, which was granted to w2',
    ]);
  });

  it('names a fact of an old epoch that landed after the next epoch was granted', () => {
    const { facts, grants } = fencedRun();
    // w1 woke up and its tool.settled was stored after w2's takeover: the fencing failed.
    expect(leaseViolations(withFact(facts, 8, { workerId: 'w1', leaseEpoch: 1 }), grants)).toEqual([
      'lease: seq 8 tool.settled of run run_1 by w1 under epoch 1 landed after epoch 2 was granted to w2 (session at seq 7)',
    ]);
  });

  it('names epochs going down along seq', () => {
    const { facts, grants } = fencedRun();
    // Granted later than its seq says: the grant's own bound is off too, so both are named.
    const late = grants.map((grant) => (grant.epoch === 2 ? { ...grant, lastSeq: 9 } : grant));
    expect(leaseViolations(withFact(facts, 10, { workerId: 'w1', leaseEpoch: 1 }), late)).toEqual([
      "lease: seq 8 tool.settled of run run_1 under epoch 2 lies before that epoch's grant (session at seq 9)",
      "lease: seq 9 tool.settled of run run_1 under epoch 2 lies before that epoch's grant (session at seq 9)",
      'lease: seq 10 step.started of run run_1 by w1 under epoch 1 landed after epoch 2 was granted to w2 (session at seq 9)',
      'lease: seq 10 step.started of run run_1 has epoch 1, after seq 9 had epoch 2',
    ]);
  });

  it('names an epoch granted twice', () => {
    const { facts, grants } = fencedRun();
    const twice = [...grants, { ...(grants[1] as LeaseGrant), workerId: 'w3' }];
    expect(leaseViolations(facts, twice)).toEqual([
      'lease: run run_1 epoch 2 granted 2 times (w2, w3)',
    ]);
  });
});

describe('executorViolations', () => {
  it('names a call executed by a worker other than the one that recorded its tool.started', () => {
    const { facts } = fencedRun();
    expect(executorViolations(facts, executed(['c1', 'w1'], ['c2', 'w2']))).toEqual([
      'lease: c2 executed by w2 (pid 7), but its tool.started (seq 7) was appended by w1',
    ]);
  });
});

describe('workersFinalViolations', () => {
  it('adds the single-process final checks: a call executed twice, a run that did not complete', () => {
    const { facts, grants } = fencedRun();
    const aborted = withFact(facts, 12, {
      status: 'aborted',
      reason: 'user_stop',
    } as Partial<Fact>);
    expect(
      workersFinalViolations({
        facts: aborted,
        executions: executed(['c1', 'w1'], ['c2', 'w1'], ['c2', 'w1']),
        requests: 2,
        grants,
      }),
    ).toEqual([
      'I5/I8: c2 executed 2 times',
      'c2 settled success after 2 executions',
      'the run ended aborted/user_stop, expected completed',
    ]);
  });
});

describe('the lease audit trigger', () => {
  let database: ReturnType<typeof testSchema>;
  beforeAll(() => {
    database = testSchema('workers_audit');
  });
  afterAll(() => database.drop());

  it('records acquisitions and takeovers with the session seq, not renewals or releases', async () => {
    const store = database.open();
    await store.sessions();
    const pool = database.pool();
    try {
      for (const statement of leaseAuditSql(database.schema)) await pool.query(statement);
      const ids = { sessionId: 'a1', runId: 'r1' };
      const first = await store.acquireLease({ ...ids, workerId: 'w1', leaseMs: 60_000 });
      if (!first.acquired) throw new Error('not acquired');
      const { lease } = first;
      const token = { workerId: lease.workerId, leaseEpoch: lease.epoch };
      await store.append('a1', [{ ...storeFacts('a1').runStarted('f1', 'r1'), ...token }]);
      await store.renewLeases({ leases: [lease], leaseMs: 60_000 });
      await store.releaseLease({ lease, handOver: true });
      const taken = await store.takeOverExpiredLeases({ workerId: 'w2', leaseMs: 60_000 });
      const second = taken[0];
      if (second === undefined) throw new Error('nothing taken over');
      await store.releaseLease({ lease: second });
      await store.acquireLease({ ...ids, workerId: 'w3', leaseMs: 60_000 });
      const { rows } = await pool.query(
        `SELECT worker_id, epoch, last_seq, previous_worker_id FROM "${database.schema}".lease_grants ORDER BY grant_id`,
      );
      expect(rows).toEqual([
        { worker_id: 'w1', epoch: 1, last_seq: 0, previous_worker_id: null },
        { worker_id: 'w2', epoch: 2, last_seq: 1, previous_worker_id: 'w1' },
        { worker_id: 'w3', epoch: 3, last_seq: 1, previous_worker_id: null },
      ]);
    } finally {
      await pool.end();
    }
  });
});
