import {
  isTurnlogErrorNamed,
  TurnlogError,
  type TurnlogErrorOptions,
} from '../events/turnlog-error.ts';
import type { OpenRun } from './event-store.ts';

/**
 * One worker's right to drive one run until `expiresAtMs` (the database's clock). `epoch` grows
 * by one each time the run changes hands; it is the fencing token every fact appended under the
 * lease carries (`workerId`, `leaseEpoch`), and the store refuses those facts once the lease is
 * gone.
 */
export interface RunLease {
  sessionId: string;
  runId: string;
  workerId: string;
  epoch: number;
  /** When the lease lapses unless renewed, in ms since the epoch, by the database's clock. */
  expiresAtMs: number;
}

/** What the store knows of a run's lease: who holds it (if anyone) and whether it is live. */
export interface RunLeaseState {
  sessionId: string;
  runId: string;
  /** The holder; `undefined` once released (a parked or ended run is driven by nobody). */
  workerId: string | undefined;
  epoch: number;
  expiresAtMs: number;
  /** Held and not expired, by the database's clock now: appends under it are accepted. */
  live: boolean;
}

/** The outcome of `acquireLease`. */
export type LeaseAttempt =
  | { acquired: true; lease: RunLease }
  | {
      acquired: false;
      /** The live lease that stands in the way (another worker's, or this worker's own). */
      holder: RunLeaseState;
    };

/**
 * Leases with fencing, for stores shared by several workers (processes): a run is driven by one
 * worker at a time. A store that implements it checks, in the transaction of every append, that a
 * fact carrying `workerId`/`leaseEpoch` comes from the run's live lease (else `LeaseLostError`),
 * and that a fact carrying none is not for a run another worker holds (else `RunLeasedError`).
 * Stores for one process (memoryStore, lowdbStore) do not implement it.
 *
 * @example
 * const attempt = await store.acquireLease({ sessionId, runId, workerId: 'w1', leaseMs: 15_000 });
 * if (attempt.acquired) {
 *   const { workerId, epoch: leaseEpoch } = attempt.lease;
 *   await store.append(sessionId, [{ ...fact, workerId, leaseEpoch }], { expectedSeq });
 * }
 */
export interface RunLeases {
  /**
   * Takes the run's lease when nobody holds it (never leased, released, or expired: then with
   * `epoch` + 1). A live lease, even this worker's own, is not taken: `{ acquired: false }`.
   */
  acquireLease(options: {
    sessionId: string;
    runId: string;
    workerId: string;
    leaseMs: number;
  }): Promise<LeaseAttempt>;
  /**
   * Extends live leases by `leaseMs` from now, all in one statement. A lease that expired, was
   * released or taken over is not renewed: it is in `lost`, and its holder must stop driving it.
   * A live lease an append of its holder is writing under right now is in neither list (it is
   * renewed at the next call): one long append never holds up the renewal of the others.
   */
  renewLeases(options: {
    leases: readonly RunLease[];
    leaseMs: number;
  }): Promise<{ renewed: RunLease[]; lost: RunLease[] }>;
  /**
   * Gives a lease up. Without `handOver` the run is left to nobody (it is parked or ended: the
   * next request for it acquires the lease); with `handOver` it expires now, so another worker's
   * `takeOverExpiredLeases` picks it up (a worker shutting down). Resolves `false` when the lease
   * was no longer held by this worker and epoch (nothing changed).
   */
  releaseLease(options: { lease: RunLease; handOver?: boolean }): Promise<boolean>;
  /**
   * Takes over up to `limit` (default 10) runs whose lease expired (their worker died, hangs or
   * was cut off) or was handed over, oldest expiry first, each with `epoch` + 1. Two workers
   * calling it at once never get the same run. Runs that ended are never taken. A lease of
   * `workerId`'s own is taken only once it has been expired for `leaseMs`: a worker that could
   * not renew in time leaves its runs to the others first.
   */
  takeOverExpiredLeases(options: {
    workerId: string;
    leaseMs: number;
    limit?: number;
  }): Promise<RunLease[]>;
  /** The run's lease as it stands, or `undefined` if it was never leased. */
  leaseOf(options: { sessionId: string; runId: string }): Promise<RunLeaseState | undefined>;
  /**
   * The unfinished runs nobody drives and no worker parked: their lease expired while held (its
   * worker died, hangs, or handed it over) or they never had one (appended without a lease, or
   * imported), in the order of `openRuns()`. A run waiting for a person whose worker released
   * its lease, and a run a live lease holds, are not in it: what a worker's `recover()` resumes,
   * read by index (never every open run), so its cost does not grow with the runs parked.
   */
  unattendedRuns(): Promise<OpenRun[]>;
  /**
   * How a worker thread renews this store's leases over a connection of its own, so that no
   * work on the main thread's event loop (a 50 MB tool output, a blocking tool) holds a renewal
   * up; `undefined` when the store cannot say (`postgresStore` given a pool of yours, whose
   * connection settings a thread cannot copy). Optional: a store without it is renewed from the
   * event loop.
   */
  leaseRenewalThread?(): LeaseRenewalThread | undefined;
}

/**
 * What a worker thread opens to renew a store's leases (`RunLeases.leaseRenewalThread`): the URL
 * of a module exporting `openLeaseRenewer(options): Promise<LeaseRenewer>`, and its options
 * (structured-cloneable: they are copied into the thread).
 */
export interface LeaseRenewalThread {
  module: string;
  options: unknown;
}

/** A renewer opened in a worker thread: `renewLeases` as the store's, over its own connection. */
export interface LeaseRenewer {
  renewLeases: RunLeases['renewLeases'];
  /** Ends its connection. */
  close(): Promise<void>;
}

/**
 * A worker's append, renewal or inbox settlement under a lease it no longer holds: the lease
 * expired, was released, or another worker took the run over (a higher epoch). Nothing of the
 * call was stored. The worker must stop driving the run (start no tool, send no request) and
 * drop it; the run goes on with the lease's new holder.
 */
export class LeaseLostError extends TurnlogError {
  static isInstance = isTurnlogErrorNamed<LeaseLostError>('LeaseLostError');
  readonly sessionId: string;
  readonly runId: string;
  readonly workerId: string;
  readonly epoch: number;
  /** The lease as it stands now (`undefined` if the run has none). */
  readonly current: RunLeaseState | undefined;

  constructor(
    options: TurnlogErrorOptions & {
      sessionId: string;
      runId: string;
      workerId: string;
      epoch: number;
      current: RunLeaseState | undefined;
    },
  ) {
    super(options);
    this.name = 'LeaseLostError';
    this.sessionId = options.sessionId;
    this.runId = options.runId;
    this.workerId = options.workerId;
    this.epoch = options.epoch;
    this.current = options.current;
  }
}

/**
 * An append without a lease (no `workerId`/`leaseEpoch`) to a run another worker drives under a
 * live lease. Nothing was stored: route the request to that worker (its inbox), or wait until
 * the lease is released or expires.
 */
export class RunLeasedError extends TurnlogError {
  static isInstance = isTurnlogErrorNamed<RunLeasedError>('RunLeasedError');
  readonly sessionId: string;
  readonly runId: string;
  readonly holder: RunLeaseState;

  constructor(
    options: TurnlogErrorOptions & { sessionId: string; runId: string; holder: RunLeaseState },
  ) {
    super(options);
    this.name = 'RunLeasedError';
    this.sessionId = options.sessionId;
    this.runId = options.runId;
    this.holder = options.holder;
  }
}
