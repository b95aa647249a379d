import type { EventStore } from '../../../store/event-store.ts';
import type { RunInbox } from '../../../store/run-inbox.ts';
import {
  LeaseLostError,
  type LeaseRenewalThread,
  type RunLease,
  type RunLeaseState,
  type RunLeases,
} from '../../../store/run-leases.ts';
import { RenewalThread } from './renewal-thread.ts';

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

/** True when `value` is a granted lease rather than the state of someone else's. */
export function isGranted(value: RunLease | RunLeaseState): value is RunLease {
  return !('live' in value);
}

/** The error a driver fails with once worker `workerId` no longer holds its run's lease. */
export function lostLease(
  workerId: string,
  { sessionId, runId }: { sessionId: string; runId: string },
  epoch: number | undefined,
): LeaseLostError {
  return new LeaseLostError({
    message: `worker ${workerId} lost epoch ${epoch} of run ${runId}'s lease (it expired before a renewal, or the run was taken over); it drives the run no more`,
    sessionId,
    runId,
    workerId,
    epoch: epoch ?? 0,
    current: undefined,
  });
}

/** What a worker's leases are built from (`new WorkerLeases`). */
export interface WorkerLeasesOptions {
  store: SharedStore;
  workerId: string;
  leaseMs: number;
  /** Randomness in [0, 1): the takeover scan's jitter, so workers do not scan in step. */
  random: () => number;
  /** A clock in milliseconds (the runtime's `now`): when a renewal is due before an append. */
  now: () => number;
  /** A held lease is gone (a renewal found it expired, released or taken over). */
  onLost: (lease: RunLease) => void;
  /** The scan took over a run whose lease had expired (or was handed over): drive it. */
  onTakenOver: (lease: RunLease) => void;
  /** A renewal or scan failed (the database is away): reported, retried at the next tick. */
  onError: (error: unknown) => void;
  /** A renewal failed: the `count` leases it was to renew were not renewed (metrics). */
  onRenewalFailed?: (count: number) => void;
  /**
   * Renew from a worker thread over a connection of its own (`RenewalThread`), which the event
   * loop's work never holds up; without it (or until the thread is up, or once it is gone) the
   * leases are renewed from a timer on the event loop.
   */
  thread?: LeaseRenewalThread | undefined;
}

/**
 * One worker's leases (architecture/workers.md, "The runtime side"): the runs it drives, each
 * under a lease renewed every `leaseMs / 3` in one statement for all of them (from the renewal
 * thread when there is one, else from a timer here); and a scan every `leaseMs / 4` (with jitter)
 * that takes over the runs whose lease expired. The timers and the thread are unref'd: a worker
 * never keeps its process alive by itself.
 */
export class WorkerLeases {
  readonly workerId: string;
  readonly leaseMs: number;
  readonly #options: WorkerLeasesOptions;
  readonly #store: SharedStore;
  // Per run this worker drives: its lease, as last granted or renewed.
  readonly #held = new Map<string, RunLease>();
  #renewTimer: ReturnType<typeof setInterval> | undefined;
  // The renewal thread while it renews (set once it is up; unset once it is gone).
  #thread: RenewalThread | undefined;
  #threadUp = false;
  #scanTimer: ReturnType<typeof setTimeout> | undefined;
  #closed = false;
  #renewing: Promise<void> | undefined;
  // When the last renewal that went through was sent (`now()`); its leases run from about then.
  #renewedAt = Number.NEGATIVE_INFINITY;
  #scanning = false;

  constructor(options: WorkerLeasesOptions) {
    this.workerId = options.workerId;
    this.leaseMs = options.leaseMs;
    this.#options = options;
    this.#store = options.store;
    this.#startRenewTimer();
    if (options.thread !== undefined) this.#thread = this.#startThread(options.thread);
    this.#scheduleScan();
  }

  /** Where the leases are renewed from now: `thread` once the renewal thread is up. */
  get renewal(): 'thread' | 'loop' {
    return this.#threadUp ? 'thread' : 'loop';
  }

  /**
   * Renews now when a renewal is due (`leaseMs / 3` since the last one went through), waiting
   * for one in flight. Called before and after each append of a run driven here: a long append
   * (a large fact: its JSON, its redaction, its SQL, all on the event loop) blocks the renewal
   * timer, and a lease due for renewal then lapsed under the append, which its own worker then
   * took over (issue 26, defect 5). Never throws: a failed renewal is reported as the timer's is.
   */
  async renewIfDue(): Promise<void> {
    // The thread renews on time whatever this event loop does.
    if (this.#threadUp) return;
    if (this.#options.now() - this.#renewedAt < this.leaseMs / 3) return;
    await this.#renew();
  }

  /** The lease this worker holds on a run, if any. */
  held(runId: string): RunLease | undefined {
    return this.#held.get(runId);
  }

  /**
   * Takes the run's lease when nobody drives it; a lease this worker already holds is kept.
   * Otherwise the live lease that stands in the way.
   */
  async acquire(sessionId: string, runId: string): Promise<RunLease | RunLeaseState> {
    const mine = this.#held.get(runId);
    if (mine !== undefined) return mine;
    const { workerId, leaseMs } = this;
    const attempt = await this.#store.acquireLease({ sessionId, runId, workerId, leaseMs });
    if (!attempt.acquired) return attempt.holder;
    this.#hold(attempt.lease);
    return attempt.lease;
  }

  /** Forgets a lease without telling the store (the run ended: its lease went with `run.ended`; or it was lost). */
  forget(runId: string): void {
    this.#drop(runId);
  }

  /** Gives a run's lease up (parked: to nobody; `handOver`: for another worker to take over now). */
  async release(runId: string, handOver = false): Promise<void> {
    const lease = this.#drop(runId);
    if (lease === undefined) return;
    await this.#store.releaseLease({ lease, handOver });
  }

  /** Stops the timers and hands every lease still held over to the other workers. */
  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#renewTimer);
    if (this.#scanTimer !== undefined) clearTimeout(this.#scanTimer);
    // The thread first: it renews nothing more that is handed over below.
    await this.#thread?.close();
    const leases = [...this.#held.values()];
    this.#held.clear();
    await Promise.all(
      leases.map((lease) => this.#store.releaseLease({ lease, handOver: true }).catch(() => false)),
    );
  }

  #scheduleScan(): void {
    if (this.#closed) return;
    // leaseMs / 4, ±25 %.
    const delay = Math.max(
      1,
      Math.floor((this.leaseMs / 4) * (0.75 + 0.5 * this.#options.random())),
    );
    this.#scanTimer = setTimeout(
      () => void this.#scan().finally(() => this.#scheduleScan()),
      delay,
    );
    this.#scanTimer.unref();
  }

  /** Renews every held lease in one statement (one at a time: a call meanwhile waits for it). */
  #renew(): Promise<void> {
    if (this.#closed || this.#held.size === 0) return Promise.resolve();
    this.#renewing ??= this.#renewHeld().finally(() => {
      this.#renewing = undefined;
    });
    return this.#renewing;
  }

  /** Renews every held lease; a lease found gone is forgotten and reported. */
  async #renewHeld(): Promise<void> {
    try {
      const sentAt = this.#options.now();
      const leases = [...this.#held.values()];
      const { renewed, lost } = await this.#store.renewLeases({ leases, leaseMs: this.leaseMs });
      this.#renewedAt = sentAt;
      for (const lease of renewed) {
        // Only a lease still held as it was sent (not released or replaced meanwhile).
        if (this.#held.get(lease.runId)?.epoch === lease.epoch) this.#held.set(lease.runId, lease);
      }
      this.#lost(lost);
    } catch (error) {
      this.#failed(this.#held.size, error);
    }
  }

  /** Leases a renewal found gone: each still held as it was sent is dropped and reported. */
  #lost(lost: readonly RunLease[]): void {
    for (const lease of lost) {
      if (this.#held.get(lease.runId)?.epoch !== lease.epoch) continue;
      this.#drop(lease.runId);
      this.#options.onLost(lease);
    }
  }

  #failed(count: number, error: unknown): void {
    this.#options.onRenewalFailed?.(count);
    if (!this.#closed) this.#options.onError(error);
  }

  #hold(lease: RunLease): void {
    this.#held.set(lease.runId, lease);
    this.#thread?.hold(lease);
  }

  #drop(runId: string): RunLease | undefined {
    const lease = this.#held.get(runId);
    if (lease === undefined) return undefined;
    this.#held.delete(runId);
    this.#thread?.drop(lease);
    return lease;
  }

  #startRenewTimer(): void {
    this.#renewTimer = setInterval(
      () => void this.#renew(),
      Math.max(1, Math.floor(this.leaseMs / 3)),
    );
    this.#renewTimer.unref();
  }

  /**
   * Starts the renewal thread; the timer here renews until it is up, and again if it goes (a
   * thread that could not open, or died: reported once, as a renewal failure is).
   */
  #startThread(renewal: LeaseRenewalThread): RenewalThread | undefined {
    try {
      return this.#newThread(renewal);
    } catch (error) {
      this.#options.onError(
        new Error(
          `the lease renewal thread could not start (${(error as Error)?.message}); its leases are renewed from the event loop`,
        ),
      );
      return undefined;
    }
  }

  #newThread(renewal: LeaseRenewalThread): RenewalThread {
    return new RenewalThread({
      renewal,
      leaseMs: this.leaseMs,
      onReady: () => {
        if (this.#closed) return;
        this.#threadUp = true;
        clearInterval(this.#renewTimer);
        this.#renewTimer = undefined;
      },
      onLost: (leases) => this.#lost(leases),
      onFailed: (count, error) => this.#failed(count, error),
      onGone: (error) => {
        this.#thread = undefined;
        this.#threadUp = false;
        if (this.#closed) return;
        if (this.#renewTimer === undefined) this.#startRenewTimer();
        this.#options.onError(
          new Error(`${error.message}; its leases are renewed from the event loop from now on`),
        );
      },
    });
  }

  /** Takes over the runs whose lease expired (or was handed over), and hands them on to be driven. */
  async #scan(): Promise<void> {
    if (this.#scanning || this.#closed) return;
    this.#scanning = true;
    try {
      const { workerId, leaseMs } = this;
      const taken = await this.#store.takeOverExpiredLeases({ workerId, leaseMs });
      for (const lease of taken) {
        if (this.#closed) {
          // Taken while closing: hand it on at once.
          await this.#store.releaseLease({ lease, handOver: true }).catch(() => {});
          continue;
        }
        this.#hold(lease);
        this.#options.onTakenOver(lease);
      }
    } catch (error) {
      if (!this.#closed) this.#options.onError(error);
    } finally {
      this.#scanning = false;
    }
  }
}
