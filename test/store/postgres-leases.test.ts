import fc from 'fast-check';
import type pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { NewFact } from '../../events/facts.ts';
import type { PgPool, PgPoolClient } from '../../store/postgres-connection.ts';
import type { PostgresStore } from '../../store/postgres-store.ts';
import { LeaseLostError, type RunLease, RunLeasedError } from '../../store/run-leases.ts';
import { testSchema } from '../helpers/postgres.ts';
import { storeFacts } from './store-facts.ts';

const a = storeFacts('session_a');
const leaseMs = 60_000;

/** A fact appended under `lease` (its fencing token in the envelope). */
const under = (lease: RunLease, fact: NewFact): NewFact => ({
  ...fact,
  workerId: lease.workerId,
  leaseEpoch: lease.epoch,
});

describe('postgresStore leases and fencing', () => {
  let database: ReturnType<typeof testSchema>;
  let admin: pg.Pool;
  let w1: PostgresStore;
  let w2: PostgresStore;

  beforeEach(() => {
    database = testSchema('leases');
    admin = database.pool();
    w1 = database.open();
    w2 = database.open();
  });

  afterEach(async () => {
    await admin.end();
    await database.drop();
  });

  /** The lease's time runs out now (the database's clock moved on, without waiting for it). */
  async function expire(sessionId: string, runId: string) {
    await admin.query(
      `UPDATE "${database.schema}".leases SET expires_at = clock_timestamp() - interval '1 second'
       WHERE session_id = $1 AND run_id = $2`,
      [sessionId, runId],
    );
  }

  async function acquired(store: PostgresStore, workerId: string, runId = 'run_1') {
    const attempt = await store.acquireLease({ sessionId: 'session_a', runId, workerId, leaseMs });
    if (!attempt.acquired) throw new Error(`${workerId} did not get ${runId}`);
    return attempt.lease;
  }

  const ids = async (store: PostgresStore) =>
    (await store.read('session_a')).map((fact) => fact.id);

  it('gives a run to one worker at a time, from epoch 1; a live lease is never taken, not even by its holder', async () => {
    const lease = await acquired(w1, 'w1');
    expect(lease).toMatchObject({
      sessionId: 'session_a',
      runId: 'run_1',
      workerId: 'w1',
      epoch: 1,
    });
    for (const [store, workerId] of [
      [w2, 'w2'],
      [w1, 'w1'],
    ] as const) {
      expect(
        await store.acquireLease({ sessionId: 'session_a', runId: 'run_1', workerId, leaseMs }),
      ).toEqual({
        acquired: false,
        holder: { ...lease, live: true },
      });
    }
  });

  it('stores facts under the live lease with worker and epoch, and refuses a wrong token or none', async () => {
    const lease = await acquired(w1, 'w1');
    const { appended } = await w1.append('session_a', [under(lease, a.runStarted('f1', 'run_1'))]);
    expect(appended[0]).toMatchObject({ id: 'f1', seq: 1, workerId: 'w1', leaseEpoch: 1 });

    const impostor = await w2
      .append('session_a', [under({ ...lease, workerId: 'w2' }, a.steering('f2', 'run_1'))])
      .catch((caught: unknown) => caught);
    expect(LeaseLostError.isInstance(impostor)).toBe(true);
    expect(impostor).toMatchObject({
      workerId: 'w2',
      epoch: 1,
      current: { workerId: 'w1', live: true },
    });
    await expect(
      w1.append('session_a', [under({ ...lease, epoch: 2 }, a.steering('f3', 'run_1'))]),
    ).rejects.toSatisfy(LeaseLostError.isInstance);
    const unleased = await w2
      .append('session_a', [a.steering('f4', 'run_1')])
      .catch((caught: unknown) => caught);
    expect(RunLeasedError.isInstance(unleased)).toBe(true);
    expect((unleased as Error).message).toMatch(
      /driven by worker w1 .* send the request to that worker's inbox/,
    );
    expect(await ids(w1)).toEqual(['f1']);
  });

  it('hands an expired lease to the next worker at epoch + 1 and fences the old holder out for good', async () => {
    const old = await acquired(w1, 'w1');
    await w1.append('session_a', [under(old, a.runStarted('f1', 'run_1'))]);
    await expire('session_a', 'run_1');
    // Expired is lost, even before anyone takes the run over.
    await expect(
      w1.append('session_a', [under(old, a.steering('f2', 'run_1'))]),
    ).rejects.toMatchObject({ name: 'LeaseLostError', current: { workerId: 'w1', live: false } });

    const [taken] = await w2.takeOverExpiredLeases({ workerId: 'w2', leaseMs });
    expect(taken).toMatchObject({
      sessionId: 'session_a',
      runId: 'run_1',
      workerId: 'w2',
      epoch: 2,
    });
    expect(await w1.renewLeases({ leases: [old], leaseMs })).toEqual({ renewed: [], lost: [old] });
    expect(await w1.releaseLease({ lease: old })).toBe(false);
    await expect(
      w1.append('session_a', [under(old, a.steering('f3', 'run_1'))]),
    ).rejects.toMatchObject({ name: 'LeaseLostError', current: { workerId: 'w2', epoch: 2 } });
    if (taken === undefined) throw new Error('no takeover');
    await w2.append('session_a', [under(taken, a.steering('f4', 'run_1'))]);
    expect(await ids(w1)).toEqual(['f1', 'f4']);
    expect(await w2.takeOverExpiredLeases({ workerId: 'w2', leaseMs })).toEqual([]);
  });

  it('renews every live lease in one call and names the ones it lost', async () => {
    const first = await acquired(w1, 'w1', 'run_1');
    const second = await acquired(w1, 'w1', 'run_2');
    await expire('session_a', 'run_2');
    await w2.takeOverExpiredLeases({ workerId: 'w2', leaseMs });
    const { renewed, lost } = await w1.renewLeases({ leases: [first, second], leaseMs });
    expect(renewed).toEqual([{ ...first, expiresAtMs: expect.any(Number) }]);
    expect(renewed[0]?.expiresAtMs).toBeGreaterThanOrEqual(first.expiresAtMs);
    expect(lost).toEqual([second]);
  });

  it('leaves a released run to nobody (appends without a lease go in), and offers a handed-over one for takeover', async () => {
    const lease = await acquired(w1, 'w1');
    expect(await w1.releaseLease({ lease })).toBe(true);
    expect(await w1.leaseOf({ sessionId: 'session_a', runId: 'run_1' })).toMatchObject({
      workerId: undefined,
      epoch: 1,
      live: false,
    });
    expect(await w2.takeOverExpiredLeases({ workerId: 'w2', leaseMs })).toEqual([]);
    await w2.append('session_a', [a.runStarted('f1', 'run_1')]);

    const again = await acquired(w2, 'w2');
    expect(again.epoch).toBe(2);
    expect(await w2.releaseLease({ lease: again, handOver: true })).toBe(true);
    const [taken] = await w1.takeOverExpiredLeases({ workerId: 'w1', leaseMs });
    expect(taken).toMatchObject({ workerId: 'w1', epoch: 3 });
  });

  it('releases the lease with run.ended: an ended run is never taken over', async () => {
    const lease = await acquired(w1, 'w1');
    await w1.append('session_a', [
      under(lease, a.runStarted('f1', 'run_1')),
      under(lease, a.runEnded('f2', 'run_1')),
    ]);
    expect(await w1.leaseOf({ sessionId: 'session_a', runId: 'run_1' })).toMatchObject({
      workerId: undefined,
      live: false,
    });
    await expire('session_a', 'run_1');
    expect(await w2.takeOverExpiredLeases({ workerId: 'w2', leaseMs })).toEqual([]);
  });

  it('never gives one expired run to two workers taking over at once', async () => {
    const runIds = [...Array(12).keys()].map((n) => `run_${n}`);
    for (const runId of runIds) await acquired(w1, 'w1', runId);
    await admin.query(
      `UPDATE "${database.schema}".leases SET expires_at = clock_timestamp() - interval '1 second'`,
    );
    const w3 = database.open();
    const taken = await Promise.all(
      [w2, w3, w2, w3].map((store, index) =>
        store.takeOverExpiredLeases({ workerId: `taker_${index}`, leaseMs, limit: 4 }),
      ),
    );
    const all = taken.flat();
    expect(all.map((lease) => lease.runId).sort()).toEqual([...runIds].sort());
    expect(all.every((lease) => lease.epoch === 2)).toBe(true);
  });

  it('refuses an append of the old epoch that waited on the session while the run was taken over', async () => {
    const old = await acquired(w1, 'w1');
    await w1.append('session_a', [under(old, a.runStarted('f1', 'run_1'))]);
    // Another append holds the session's row: w1's next append waits for it inside its transaction.
    const blocker = await admin.connect();
    await blocker.query('BEGIN');
    await blocker.query(
      `SELECT 1 FROM "${database.schema}".sessions WHERE session_id = 'session_a' FOR UPDATE`,
    );
    const late = w1.append('session_a', [under(old, a.steering('f2', 'run_1'))]).then(
      () => 'stored',
      (error: unknown) => error,
    );
    await waitForLockWait(admin);
    await expire('session_a', 'run_1');
    const [taken] = await w2.takeOverExpiredLeases({ workerId: 'w2', leaseMs });
    await blocker.query('COMMIT');
    blocker.release();
    const outcome = await late;
    expect(LeaseLostError.isInstance(outcome)).toBe(true);
    expect(outcome).toMatchObject({ epoch: 1, current: { workerId: 'w2', epoch: taken?.epoch } });
    expect(await ids(w2)).toEqual(['f1']);
  });

  it('makes a takeover wait for an append of the old epoch that passed its lease check, so the new holder reads it', async () => {
    const gate = gatedCommits(database.url);
    const slow = database.open({ pool: gate.pool });
    const lease = (await slow.acquireLease({
      sessionId: 'session_a',
      runId: 'run_1',
      workerId: 'w1',
      leaseMs: 1_500,
    })) as { acquired: true; lease: RunLease };
    const order: string[] = [];
    gate.hold();
    const append = slow
      .append('session_a', [under(lease.lease, a.runStarted('f1', 'run_1'))])
      .then(() => order.push('w1 committed'));
    await gate.reached;
    // The lease runs out while the append waits to commit (the database's own clock).
    while ((await w2.leaseOf({ sessionId: 'session_a', runId: 'run_1' }))?.live) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(await w2.takeOverExpiredLeases({ workerId: 'w2', leaseMs })).toEqual([]);
    const acquire = w2
      .acquireLease({ sessionId: 'session_a', runId: 'run_1', workerId: 'w2', leaseMs })
      .then((attempt) => {
        order.push('w2 acquired');
        return attempt;
      });
    await waitForLockWait(admin);
    gate.release();
    await append;
    expect(await acquire).toMatchObject({ acquired: true, lease: { workerId: 'w2', epoch: 2 } });
    expect(order).toEqual(['w1 committed', 'w2 acquired']);
    expect(await ids(w2)).toEqual(['f1']);
    await gate.end();
  });

  it("makes a run's first lease wait for an append without a lease in flight on the session", async () => {
    const gate = gatedCommits(database.url);
    const plain = database.open({ pool: gate.pool });
    await plain.sessions();
    const order: string[] = [];
    gate.hold();
    const append = plain
      .append('session_a', [a.runStarted('f1', 'run_1')])
      .then(() => order.push('appended'));
    await gate.reached;
    const acquire = w2
      .acquireLease({ sessionId: 'session_a', runId: 'run_1', workerId: 'w2', leaseMs })
      .then((attempt) => {
        order.push('acquired');
        return attempt;
      });
    await waitForLockWait(admin);
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

  it('keeps every fact in the log from the lease it claims, whatever workers, expiries and takeovers interleave', async () => {
    const workers = [w1, w2, database.open()];
    await w1.sessions(); // the schema exists before the first expire() touches it
    let round = 0;
    const command = fc.record({
      worker: fc.integer({ min: 0, max: 2 }),
      action: fc.constantFrom('append', 'append', 'acquire', 'takeover', 'expire', 'release'),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(command, { minLength: 1, maxLength: 3 }), { maxLength: 14 }),
        async (batches) => {
          round += 1;
          const sessionId = `session_${round}`;
          const facts = storeFacts(sessionId);
          const held: (RunLease | undefined)[] = [undefined, undefined, undefined];
          const granted = new Map<number, string>();
          const stored = new Set<string>();
          const refused = new Set<string>();
          let next = 0;
          const grant = (worker: number, lease: RunLease | undefined) => {
            if (lease === undefined) return;
            expect(granted.has(lease.epoch)).toBe(false);
            granted.set(lease.epoch, lease.workerId);
            held[worker] = lease;
          };
          for (const batch of batches) {
            await Promise.all(
              batch.map(async ({ worker, action }) => {
                const store = workers[worker] as PostgresStore;
                const workerId = `w${worker}`;
                const lease = held[worker];
                if (action === 'append' && lease !== undefined) {
                  next += 1;
                  const id = `f${next}`;
                  const fact = under(lease, facts.steering(id, 'run_1'));
                  await store.append(sessionId, [fact]).then(
                    () => stored.add(id),
                    (error: unknown) => {
                      expect(LeaseLostError.isInstance(error)).toBe(true);
                      refused.add(id);
                      held[worker] = undefined;
                    },
                  );
                } else if (action === 'acquire') {
                  const attempt = await store.acquireLease({
                    sessionId,
                    runId: 'run_1',
                    workerId,
                    leaseMs,
                  });
                  if (attempt.acquired) grant(worker, attempt.lease);
                } else if (action === 'takeover') {
                  const taken = await store.takeOverExpiredLeases({ workerId, leaseMs, limit: 50 });
                  grant(
                    worker,
                    taken.find((candidate) => candidate.sessionId === sessionId),
                  );
                } else if (action === 'expire') {
                  await expire(sessionId, 'run_1');
                } else if (action === 'release' && lease !== undefined) {
                  await store.releaseLease({ lease });
                  held[worker] = undefined;
                }
              }),
            );
          }
          const log = await w1.read(sessionId);
          expect(log.map((fact) => fact.id).sort()).toEqual([...stored].sort());
          expect(log.some((fact) => refused.has(fact.id))).toBe(false);
          const epochs = log.map((fact) => fact.leaseEpoch ?? 0);
          expect(epochs).toEqual([...epochs].sort((x, y) => x - y));
          for (const fact of log) expect(granted.get(fact.leaseEpoch ?? 0)).toBe(fact.workerId);
        },
      ),
      { numRuns: 12, seed: 1313 },
    );
  });
});

/** Resolves once some connection waits for a lock (the blocked statement reached the server). */
async function waitForLockWait(admin: pg.Pool): Promise<void> {
  for (;;) {
    const { rows } = await admin.query(
      `SELECT count(*)::int AS waiting FROM pg_stat_activity
       WHERE wait_event_type = 'Lock' AND datname = current_database()`,
    );
    if ((rows[0]?.waiting ?? 0) > 0) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/**
 * A pool whose COMMITs (a query ending in COMMIT) can be held back, to stop a transaction between
 * its checks and its commit.
 */
function gatedCommits(url: string) {
  // biome-ignore lint/suspicious/noExplicitAny: the pg module, loaded as the store loads it
  let real: any;
  let holding = false;
  let release!: () => void;
  let reachedGate!: () => void;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  const reached = new Promise<void>((resolve) => {
    reachedGate = resolve;
  });
  const open = async () => {
    real ??= new (await import('pg')).default.Pool({ connectionString: url, max: 4 });
    return real;
  };
  const pool: PgPool = {
    query: async (text, values) => (await open()).query(text, values),
    connect: async () => {
      const client = (await (await open()).connect()) as PgPoolClient;
      return new Proxy(client, {
        get(target, property, receiver) {
          if (property !== 'query') return Reflect.get(target, property, receiver);
          return async (text: string, values?: unknown[]) => {
            if (/\bCOMMIT$/.test(text) && holding) {
              holding = false;
              reachedGate();
              await released;
            }
            return target.query(text, values);
          };
        },
      });
    },
    end: async () => {},
  };
  return {
    pool,
    reached,
    hold: () => {
      holding = true;
    },
    release,
    end: async () => (await open()).end(),
  };
}
