import type { IdGenerator } from '../../events/ids.ts';
import type { EventStore } from '../../store/event-store.ts';
import type { RunInbox } from '../../store/run-inbox.ts';
import type { RunLease, RunLeaseState, RunLeases } from '../../store/run-leases.ts';
import type { LiveRuns, LiveRunsWorker } from './live-runs.ts';
import { performRequest, type RunRequest } from './run-requests.ts';

/** A store several workers (processes) share: leases with fencing and an inbox per run. */
export type SharedStore = EventStore & RunLeases & RunInbox;

/** The default of `worker.leaseMs`: how long a run's lease lasts without a renewal. */
export const defaultLeaseMs = 15_000;

/** True for a store that implements `RunLeases` and `RunInbox` (e.g. `postgresStore`). */
export function isSharedStore(store: EventStore): store is SharedStore {
  const candidate = store as Partial<SharedStore>;
  return (
    typeof candidate.acquireLease === 'function' &&
    typeof candidate.renewLeases === 'function' &&
    typeof candidate.takeOverExpiredLeases === 'function' &&
    typeof candidate.postToInbox === 'function' &&
    typeof candidate.subscribeInbox === 'function'
  );
}

export interface WorkerLeasesOptions {
  store: SharedStore;
  workerId: string;
  leaseMs: number;
  /** Randomness in [0, 1): the takeover scan's jitter, so workers do not scan in step. */
  random: () => number;
  /** A held lease is gone (a renewal found it expired, released or taken over). */
  onLost: (lease: RunLease) => void;
  /** The scan took over a run whose lease had expired (or was handed over): drive it. */
  onTakenOver: (lease: RunLease) => void;
  /** A renewal or scan failed (the database is away): reported, retried at the next tick. */
  onError: (error: unknown) => void;
}

/**
 * One worker's leases (architecture/workers.md, "The runtime side"): the runs it drives, each
 * under a lease renewed every `leaseMs / 3` in one statement for all of them; and a scan every
 * `leaseMs / 4` (with jitter) that takes over the runs whose lease expired. Both timers are
 * unref'd: a worker never keeps its process alive by itself.
 */
export function createWorkerLeases(options: WorkerLeasesOptions) {
  const { store, workerId, leaseMs } = options;
  const held = new Map<string, RunLease>();
  let closed = false;
  let renewing = false;
  let scanning = false;

  const renewTimer = setInterval(() => void renew(), Math.max(1, Math.floor(leaseMs / 3)));
  renewTimer.unref();
  let scanTimer: ReturnType<typeof setTimeout> | undefined;
  scheduleScan();

  function scheduleScan() {
    if (closed) return;
    // leaseMs / 4, ±25 %.
    const delay = Math.max(1, Math.floor((leaseMs / 4) * (0.75 + 0.5 * options.random())));
    scanTimer = setTimeout(() => void scan().finally(scheduleScan), delay);
    scanTimer.unref();
  }

  async function renew() {
    if (renewing || closed || held.size === 0) return;
    renewing = true;
    try {
      const leases = [...held.values()];
      const { renewed, lost } = await store.renewLeases({ leases, leaseMs });
      for (const lease of renewed) {
        // Only a lease still held as it was sent (not released or replaced meanwhile).
        if (held.get(lease.runId)?.epoch === lease.epoch) held.set(lease.runId, lease);
      }
      for (const lease of lost) {
        if (held.get(lease.runId)?.epoch !== lease.epoch) continue;
        held.delete(lease.runId);
        options.onLost(lease);
      }
    } catch (error) {
      if (!closed) options.onError(error);
    } finally {
      renewing = false;
    }
  }

  async function scan() {
    if (scanning || closed) return;
    scanning = true;
    try {
      const taken = await store.takeOverExpiredLeases({ workerId, leaseMs });
      for (const lease of taken) {
        if (closed) {
          // Taken while closing: hand it on at once.
          await store.releaseLease({ lease, handOver: true }).catch(() => {});
          continue;
        }
        held.set(lease.runId, lease);
        options.onTakenOver(lease);
      }
    } catch (error) {
      if (!closed) options.onError(error);
    } finally {
      scanning = false;
    }
  }

  return {
    workerId,
    leaseMs,

    /** The lease this worker holds on a run, if any. */
    held: (runId: string): RunLease | undefined => held.get(runId),

    /**
     * Takes the run's lease when nobody drives it; a lease this worker already holds is kept.
     * Otherwise the live lease that stands in the way.
     */
    async acquire(sessionId: string, runId: string): Promise<RunLease | RunLeaseState> {
      const mine = held.get(runId);
      if (mine !== undefined) return mine;
      const attempt = await store.acquireLease({ sessionId, runId, workerId, leaseMs });
      if (!attempt.acquired) return attempt.holder;
      held.set(runId, attempt.lease);
      return attempt.lease;
    },

    /** Forgets a lease without telling the store (the run ended: its lease went with `run.ended`; or it was lost). */
    forget(runId: string): void {
      held.delete(runId);
    },

    /** Gives a run's lease up (parked: to nobody; `handOver`: for another worker to take over now). */
    async release(runId: string, handOver = false): Promise<void> {
      const lease = held.get(runId);
      if (lease === undefined) return;
      held.delete(runId);
      await store.releaseLease({ lease, handOver });
    },

    /** Stops the timers and hands every lease still held over to the other workers. */
    async close(): Promise<void> {
      closed = true;
      clearInterval(renewTimer);
      if (scanTimer !== undefined) clearTimeout(scanTimer);
      const leases = [...held.values()];
      held.clear();
      await Promise.all(
        leases.map((lease) => store.releaseLease({ lease, handOver: true }).catch(() => false)),
      );
    },
  };
}

export type WorkerLeases = ReturnType<typeof createWorkerLeases>;

/** True when `value` is a granted lease rather than the state of someone else's. */
export function isGranted(value: RunLease | RunLeaseState): value is RunLease {
  return !('live' in value);
}

/**
 * A runtime's worker on a shared store: its leases, wired to the live runs (`runs`, read when a
 * lease event comes: the live runs are built with this worker), and how it performs a request
 * from a run's inbox. A renewal, scan or takeover that fails is a process warning
 * (`TURNLOG_WORKER_ERROR`), retried at the next tick, and silent once the runtime closes.
 */
export function createWorker(options: {
  store: SharedStore;
  id: string;
  leaseMs: number;
  random: () => number;
  generateId: IdGenerator;
  closed: AbortSignal;
  runs: () => LiveRuns;
}): LiveRunsWorker {
  const { store, generateId } = options;
  const onError = (error: unknown) => {
    if (options.closed.aborted) return;
    const reason = error instanceof Error ? error.message : String(error);
    process.emitWarning(`turnlog worker ${options.id}: ${reason}; retried at the next tick`, {
      code: 'TURNLOG_WORKER_ERROR',
    });
  };
  const leases = createWorkerLeases({
    store,
    workerId: options.id,
    leaseMs: options.leaseMs,
    random: options.random,
    onLost: (lease) => options.runs().lost(lease.sessionId, lease.runId, lease.epoch),
    onTakenOver: ({ sessionId, runId }) => {
      const runs = options.runs();
      runs.withSession(sessionId, () => runs.recover(sessionId, runId)).catch(onError);
    },
    onError,
  });
  return {
    store,
    leases,
    perform: (driver, item) =>
      performRequest(driver, { kind: item.kind, input: item.input } as RunRequest, {
        sessionId: item.sessionId,
        generateId,
        id: item.id,
      }),
    onError,
  };
}
