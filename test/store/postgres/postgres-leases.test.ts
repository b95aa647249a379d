import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { PostgresStore } from '../../../store/postgres/postgres-store.ts';
import { LeaseLostError, type RunLease, RunLeasedError } from '../../../store/run-leases.ts';
import { storeFacts } from '../store-facts.ts';
import { leaseMs, under, useLeaseFixture } from './postgres-lease-fixture.ts';

const a = storeFacts('session_a');

describe('postgresStore leases and fencing', () => {
  const f = useLeaseFixture();

  it('gives a run to one worker at a time, from epoch 1; a live lease is never taken, not even by its holder', async () => {
    const lease = await f.acquired(f.w1, 'f.w1');
    expect(lease).toMatchObject({
      sessionId: 'session_a',
      runId: 'run_1',
      workerId: 'f.w1',
      epoch: 1,
    });
    for (const [store, workerId] of [
      [f.w2, 'f.w2'],
      [f.w1, 'f.w1'],
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
    const lease = await f.acquired(f.w1, 'f.w1');
    const { appended } = await f.w1.append('session_a', [
      under(lease, a.runStarted('f1', 'run_1')),
    ]);
    expect(appended[0]).toMatchObject({ id: 'f1', seq: 1, workerId: 'f.w1', leaseEpoch: 1 });

    const impostor = await f.w2
      .append('session_a', [under({ ...lease, workerId: 'f.w2' }, a.steering('f2', 'run_1'))])
      .catch((caught: unknown) => caught);
    expect(LeaseLostError.isInstance(impostor)).toBe(true);
    expect(impostor).toMatchObject({
      workerId: 'f.w2',
      epoch: 1,
      current: { workerId: 'f.w1', live: true },
    });
    await expect(
      f.w1.append('session_a', [under({ ...lease, epoch: 2 }, a.steering('f3', 'run_1'))]),
    ).rejects.toSatisfy(LeaseLostError.isInstance);
    const unleased = await f.w2
      .append('session_a', [a.steering('f4', 'run_1')])
      .catch((caught: unknown) => caught);
    expect(RunLeasedError.isInstance(unleased)).toBe(true);
    expect((unleased as Error).message).toMatch(
      /driven by worker f.w1 .* send the request to that worker's inbox/,
    );
    expect(await f.ids(f.w1)).toEqual(['f1']);
  });

  it('hands an expired lease to the next worker at epoch + 1 and fences the old holder out for good', async () => {
    const old = await f.acquired(f.w1, 'f.w1');
    await f.w1.append('session_a', [under(old, a.runStarted('f1', 'run_1'))]);
    await f.expire('session_a', 'run_1');
    // Expired is lost, even before anyone takes the run over.
    await expect(
      f.w1.append('session_a', [under(old, a.steering('f2', 'run_1'))]),
    ).rejects.toMatchObject({ name: 'LeaseLostError', current: { workerId: 'f.w1', live: false } });

    const [taken] = await f.w2.takeOverExpiredLeases({ workerId: 'f.w2', leaseMs });
    expect(taken).toMatchObject({
      sessionId: 'session_a',
      runId: 'run_1',
      workerId: 'f.w2',
      epoch: 2,
    });
    expect(await f.w1.renewLeases({ leases: [old], leaseMs })).toEqual({
      renewed: [],
      lost: [old],
    });
    expect(await f.w1.releaseLease({ lease: old })).toBe(false);
    await expect(
      f.w1.append('session_a', [under(old, a.steering('f3', 'run_1'))]),
    ).rejects.toMatchObject({ name: 'LeaseLostError', current: { workerId: 'f.w2', epoch: 2 } });
    if (taken === undefined) throw new Error('no takeover');
    await f.w2.append('session_a', [under(taken, a.steering('f4', 'run_1'))]);
    expect(await f.ids(f.w1)).toEqual(['f1', 'f4']);
    expect(await f.w2.takeOverExpiredLeases({ workerId: 'f.w2', leaseMs })).toEqual([]);
  });

  it('renews every live lease in one call and names the ones it lost', async () => {
    const first = await f.acquired(f.w1, 'f.w1', 'run_1');
    const second = await f.acquired(f.w1, 'f.w1', 'run_2');
    await f.expire('session_a', 'run_2');
    await f.w2.takeOverExpiredLeases({ workerId: 'f.w2', leaseMs });
    const { renewed, lost } = await f.w1.renewLeases({ leases: [first, second], leaseMs });
    expect(renewed).toEqual([{ ...first, expiresAtMs: expect.any(Number) }]);
    expect(renewed[0]?.expiresAtMs).toBeGreaterThanOrEqual(first.expiresAtMs);
    expect(lost).toEqual([second]);
  });

  it('leaves a released run to nobody (appends without a lease go in), and offers a handed-over one for takeover', async () => {
    const lease = await f.acquired(f.w1, 'f.w1');
    expect(await f.w1.releaseLease({ lease })).toBe(true);
    expect(await f.w1.leaseOf({ sessionId: 'session_a', runId: 'run_1' })).toMatchObject({
      workerId: undefined,
      epoch: 1,
      live: false,
    });
    expect(await f.w2.takeOverExpiredLeases({ workerId: 'f.w2', leaseMs })).toEqual([]);
    await f.w2.append('session_a', [a.runStarted('f1', 'run_1')]);

    const again = await f.acquired(f.w2, 'f.w2');
    expect(again.epoch).toBe(2);
    expect(await f.w2.releaseLease({ lease: again, handOver: true })).toBe(true);
    const [taken] = await f.w1.takeOverExpiredLeases({ workerId: 'f.w1', leaseMs });
    expect(taken).toMatchObject({ workerId: 'f.w1', epoch: 3 });
  });

  it("leaves a worker's own lapsed lease to the others for leaseMs, and takes it back after", async () => {
    // Issue 26, defect 5: a worker whose lease lapsed took its own run back at its next scan,
    // re-sent the request, lapsed again, three times, and the run ended failed/interrupted.
    const first = await f.acquired(f.w1, 'f.w1', 'run_1');
    const second = await f.acquired(f.w1, 'f.w1', 'run_2');
    await f.expire('session_a', 'run_1');
    await f.admin.query(
      `UPDATE "${f.database.schema}".leases SET expires_at = clock_timestamp() - interval '61 seconds'
       WHERE session_id = 'session_a' AND run_id = 'run_2'`,
    );
    // run_1 expired a second ago: not for its own worker yet; run_2 a lease ago: taken back.
    expect(await f.w1.takeOverExpiredLeases({ workerId: 'f.w1', leaseMs })).toMatchObject([
      { runId: 'run_2', workerId: 'f.w1', epoch: second.epoch + 1 },
    ]);
    expect(await f.w1.takeOverExpiredLeases({ workerId: 'f.w1', leaseMs })).toEqual([]);
    // Any other worker takes run_1 at once.
    expect(await f.w2.takeOverExpiredLeases({ workerId: 'f.w2', leaseMs })).toMatchObject([
      { runId: 'run_1', workerId: 'f.w2', epoch: first.epoch + 1 },
    ]);
  });

  it('releases the lease with run.ended: an ended run is never taken over', async () => {
    const lease = await f.acquired(f.w1, 'f.w1');
    await f.w1.append('session_a', [
      under(lease, a.runStarted('f1', 'run_1')),
      under(lease, a.runEnded('f2', 'run_1')),
    ]);
    expect(await f.w1.leaseOf({ sessionId: 'session_a', runId: 'run_1' })).toMatchObject({
      workerId: undefined,
      live: false,
    });
    await f.expire('session_a', 'run_1');
    expect(await f.w2.takeOverExpiredLeases({ workerId: 'f.w2', leaseMs })).toEqual([]);
  });

  it('never gives one expired run to two workers taking over at once', async () => {
    const runIds = [...Array(12).keys()].map((n) => `run_${n}`);
    for (const runId of runIds) await f.acquired(f.w1, 'f.w1', runId);
    await f.admin.query(
      `UPDATE "${f.database.schema}".leases SET expires_at = clock_timestamp() - interval '1 second'`,
    );
    const w3 = f.database.open();
    const taken = await Promise.all(
      [f.w2, w3, f.w2, w3].map((store, index) =>
        store.takeOverExpiredLeases({ workerId: `taker_${index}`, leaseMs, limit: 4 }),
      ),
    );
    const all = taken.flat();
    expect(all.map((lease) => lease.runId).sort()).toEqual([...runIds].sort());
    expect(all.every((lease) => lease.epoch === 2)).toBe(true);
  });

  it('keeps every fact in the log from the lease it claims, whatever workers, expiries and takeovers interleave', async () => {
    const workers = [f.w1, f.w2, f.database.open()];
    await f.w1.sessions(); // the schema exists before the first expire() touches it
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
                  await f.expire(sessionId, 'run_1');
                } else if (action === 'release' && lease !== undefined) {
                  await store.releaseLease({ lease });
                  held[worker] = undefined;
                }
              }),
            );
          }
          const log = await f.w1.read(sessionId);
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
