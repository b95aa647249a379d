import { afterEach, describe, expect, it } from 'vitest';
import {
  type SharedStore,
  WorkerLeases,
} from '../../../../machines/effects/worker/worker-leases.ts';
import type { RunLease } from '../../../../store/run-leases.ts';

/** A store of leases only: every acquire is granted; renewals are counted and renew all. */
function leaseStore() {
  const renewals: number[] = [];
  const store = {
    acquireLease: async ({ sessionId, runId, workerId }: RunLease & { leaseMs: number }) => ({
      acquired: true,
      lease: { sessionId, runId, workerId, epoch: 1, expiresAtMs: 0 },
    }),
    renewLeases: async ({ leases }: { leases: readonly RunLease[] }) => {
      renewals.push(leases.length);
      return { renewed: [...leases], lost: [] };
    },
    takeOverExpiredLeases: async () => [],
    releaseLease: async () => true,
  } as unknown as SharedStore;
  return { store, renewals };
}

describe('WorkerLeases.renewIfDue (issue 26, defect 5)', () => {
  let leases: WorkerLeases | undefined;
  afterEach(async () => {
    await leases?.close();
  });

  it('renews when leaseMs / 3 passed since the last renewal went through, and not before', async () => {
    const { store, renewals } = leaseStore();
    let now = 0;
    // A lease the timer never renews here (a minute): only renewIfDue does.
    leases = new WorkerLeases({
      store,
      workerId: 'w1',
      leaseMs: 60_000,
      random: () => 0.5,
      now: () => now,
      onLost: () => {},
      onTakenOver: () => {},
      onError: (error) => {
        throw error;
      },
    });
    await leases.acquire('s1', 'run_1');
    await leases.renewIfDue();
    expect(renewals).toEqual([1]);
    now = 19_999;
    await leases.renewIfDue();
    expect(renewals).toEqual([1]);
    now = 20_000;
    await Promise.all([leases.renewIfDue(), leases.renewIfDue()]);
    // Two callers at once share one renewal.
    expect(renewals).toEqual([1, 1]);
  });
});
