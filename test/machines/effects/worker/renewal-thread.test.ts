import { afterEach, describe, expect, it } from 'vitest';
import { RenewalThread } from '../../../../machines/effects/worker/renewal-thread.ts';
import {
  type FromRenewalThread,
  type RenewalThreadData,
  ThreadRenewals,
} from '../../../../machines/effects/worker/renewal-thread-body.ts';
import {
  type SharedStore,
  WorkerLeases,
} from '../../../../machines/effects/worker/worker-leases.ts';
import type { LeaseRenewer, RunLease } from '../../../../store/run-leases.ts';

const lease = (runId: string, epoch = 1): RunLease => ({
  sessionId: `s_${runId}`,
  runId,
  workerId: 'w1',
  epoch,
  expiresAtMs: 0,
});

/** The thread's work with a renewer that answers as told, a clock, and the main thread's beats. */
function threadRenewals(answer: (leases: readonly RunLease[]) => Promise<RunLease[]>) {
  const sent: RunLease[][] = [];
  const posted: FromRenewalThread[] = [];
  const beats = new SharedArrayBuffer(4);
  let now = 0;
  const renewer: LeaseRenewer = {
    renewLeases: async ({ leases }) => {
      sent.push([...leases]);
      const lost = await answer(leases);
      return { renewed: leases.filter((held) => !lost.includes(held)), lost };
    },
    close: async () => {},
  };
  const data: RenewalThreadData = {
    kind: 'turnlog-renewal-thread',
    module: '',
    options: undefined,
    leaseMs: 3_000,
    beats,
    stallMs: 60_000,
  };
  const renewals = new ThreadRenewals({
    renewer,
    data,
    post: (message) => posted.push(message),
    now: () => now,
  });
  return {
    renewals,
    sent,
    posted,
    beat: () => Atomics.add(new Int32Array(beats), 0, 1),
    advance: (ms: number) => {
      now += ms;
    },
  };
}

describe('the renewal thread (issue 26, defect 5)', () => {
  it('renews the leases the main thread holds, and reports a lost one once', async () => {
    const gone = lease('run_2');
    const t = threadRenewals(async (leases) => leases.filter((held) => held.runId === 'run_2'));
    t.renewals.receive({ type: 'hold', lease: lease('run_1') });
    t.renewals.receive({ type: 'hold', lease: gone });
    await t.renewals.tick();
    expect(t.posted).toEqual([{ type: 'lost', leases: [gone] }]);
    await t.renewals.tick();
    expect(t.sent.map((leases) => leases.map((held) => held.runId))).toEqual([
      ['run_1', 'run_2'],
      ['run_1'],
    ]);
    expect(t.posted).toHaveLength(1);
  });

  it('renews no lease the main thread dropped, and keeps a newer one it holds for the run', async () => {
    const t = threadRenewals(async () => []);
    t.renewals.receive({ type: 'hold', lease: lease('run_1') });
    t.renewals.receive({ type: 'hold', lease: lease('run_2') });
    t.renewals.receive({ type: 'drop', runId: 'run_1', epoch: 1 });
    t.renewals.receive({ type: 'hold', lease: lease('run_2', 2) });
    // A drop of an older epoch leaves the newer lease alone.
    t.renewals.receive({ type: 'drop', runId: 'run_2', epoch: 1 });
    await t.renewals.tick();
    expect(t.sent).toEqual([[lease('run_2', 2)]]);
  });

  it('does not report a lease lost that the main thread dropped while the renewal was in flight', async () => {
    let answer!: (lost: RunLease[]) => void;
    const t = threadRenewals(
      () =>
        new Promise<RunLease[]>((resolve) => {
          answer = resolve;
        }),
    );
    const held = lease('run_1');
    t.renewals.receive({ type: 'hold', lease: held });
    const tick = t.renewals.tick();
    // One renewal at a time: a tick meanwhile does nothing.
    await t.renewals.tick();
    t.renewals.receive({ type: 'drop', runId: 'run_1', epoch: 1 });
    answer([held]);
    await tick;
    expect(t.sent).toHaveLength(1);
    expect(t.posted).toEqual([]);
  });

  it('reports a failed renewal and tries again at the next tick', async () => {
    let fail = true;
    const t = threadRenewals(async () => {
      if (fail) throw new Error('connect ECONNREFUSED');
      return [];
    });
    t.renewals.receive({ type: 'hold', lease: lease('run_1') });
    await t.renewals.tick();
    fail = false;
    await t.renewals.tick();
    expect(t.posted).toEqual([{ type: 'failed', count: 1, message: 'connect ECONNREFUSED' }]);
    expect(t.sent).toHaveLength(2);
  });

  it('renews through a busy main thread, but not for a hung one: no beat for stallMs', async () => {
    const t = threadRenewals(async () => []);
    t.renewals.receive({ type: 'hold', lease: lease('run_1') });
    t.advance(59_000);
    await t.renewals.tick();
    expect(t.sent).toHaveLength(1);
    t.advance(2_000);
    await t.renewals.tick();
    expect(t.sent).toHaveLength(1);
    // The main thread's loop turned again: renewals go on.
    t.beat();
    await t.renewals.tick();
    expect(t.sent).toHaveLength(2);
  });
});

describe('WorkerLeases with a renewal thread', () => {
  let leases: WorkerLeases | undefined;
  afterEach(async () => {
    await leases?.close();
  });

  function counted() {
    const renewals: number[] = [];
    const store = {
      acquireLease: async ({ sessionId, runId, workerId }: RunLease) => ({
        acquired: true,
        lease: { sessionId, runId, workerId, epoch: 1, expiresAtMs: 0 },
      }),
      renewLeases: async ({ leases: held }: { leases: readonly RunLease[] }) => {
        renewals.push(held.length);
        return { renewed: [...held], lost: [] };
      },
      takeOverExpiredLeases: async () => [],
      releaseLease: async () => true,
    } as unknown as SharedStore;
    return { store, renewals };
  }

  const module = (source: string) => `data:text/javascript,${encodeURIComponent(source)}`;

  it('renews from the event loop until the thread is up, then not at all', async () => {
    const { store, renewals } = counted();
    const errors: unknown[] = [];
    leases = new WorkerLeases({
      store,
      workerId: 'w1',
      leaseMs: 300,
      random: () => 0.5,
      now: () => performance.now(),
      onLost: () => {},
      onTakenOver: () => {},
      onError: (error) => errors.push(error),
      thread: {
        module: module(
          'export async function openLeaseRenewer() { return { renewLeases: async ({ leases }) => ({ renewed: [...leases], lost: [] }), close: async () => {} }; }',
        ),
        options: {},
      },
    });
    expect(leases.renewal).toBe('loop');
    await leases.acquire('s1', 'run_1');
    while (leases.renewal !== 'thread') await new Promise((done) => setTimeout(done, 10));
    const before = renewals.length;
    await new Promise((done) => setTimeout(done, 400));
    await leases.renewIfDue();
    expect(renewals.length).toBe(before);
    expect(errors).toEqual([]);
  });

  it('renews from the event loop when the thread cannot open, and says so once', async () => {
    const { store, renewals } = counted();
    const errors: Error[] = [];
    leases = new WorkerLeases({
      store,
      workerId: 'w1',
      leaseMs: 300,
      random: () => 0.5,
      now: () => performance.now(),
      onLost: () => {},
      onTakenOver: () => {},
      onError: (error) => errors.push(error as Error),
      thread: {
        module: module(
          "export async function openLeaseRenewer() { throw new Error('no pg here'); }",
        ),
        options: {},
      },
    });
    await leases.acquire('s1', 'run_1');
    while (errors.length === 0) await new Promise((done) => setTimeout(done, 10));
    expect(errors.map((error) => error.message)).toEqual([
      'the lease renewal thread did not open: no pg here; its leases are renewed from the event loop from now on',
    ]);
    const before = renewals.length;
    while (renewals.length === before) await new Promise((done) => setTimeout(done, 10));
    expect(leases.renewal).toBe('loop');
  });
});

describe('RenewalThread', () => {
  it("ends on close(): the thread closes its renewer (the store's connection) and exits by itself", async () => {
    // Shared memory reaches the thread's module through its options: it says what ran there.
    const seen = new Int32Array(new SharedArrayBuffer(8));
    const gone: Error[] = [];
    let ready!: () => void;
    const up = new Promise<void>((resolve) => {
      ready = resolve;
    });
    const thread = new RenewalThread({
      renewal: {
        module: `data:text/javascript,${encodeURIComponent(
          `export async function openLeaseRenewer({ seen }) {
             const flags = new Int32Array(seen);
             Atomics.store(flags, 0, 1);
             return {
               renewLeases: async ({ leases }) => ({ renewed: [...leases], lost: [] }),
               close: async () => { Atomics.store(flags, 1, 1); },
             };
           }`,
        )}`,
        options: { seen: seen.buffer },
      },
      leaseMs: 60_000,
      onReady: ready,
      onLost: () => {},
      onFailed: () => {},
      onGone: (error) => gone.push(error),
    });
    await up;
    expect(Atomics.load(seen, 0)).toBe(1);
    // close() would stop a thread that did not exit within a minute: past this test's timeout.
    await thread.close(60_000);
    expect(Atomics.load(seen, 1)).toBe(1);
    expect(gone).toEqual([]);
  });
});
