import type { IdGenerator } from '../../../events/ids.ts';
import type { RunTelemetry } from '../../../observability/run-telemetry.ts';
import type { OpenRun } from '../../../store/event-store.ts';
import { LeaseLostError, type RunLease, type RunLeaseState } from '../../../store/run-leases.ts';
import type { TurnMachine } from '../../pure/turn-machine.ts';
import { loadRun } from '../load-run.ts';
import type { LeaseToken, RunDriver } from '../run-driver.ts';
import type { RunIds } from '../run-handles.ts';
import type { RunRequest } from '../run-requests.ts';
import type { LeaveReason, LoadedTenure, RunTenure, TenureHost } from '../run-tenure.ts';
import { InboxTaker } from './inbox-taker.ts';
import { RequestRouter } from './request-router.ts';
import { RunFollowers } from './run-followers.ts';
import { isGranted, lostLease, type SharedStore, WorkerLeases } from './worker-leases.ts';

/** What a runtime's worker is built from (`new WorkerTenure`): its settings and the live runs. */
export interface WorkerTenureOptions {
  store: SharedStore;
  id: string;
  leaseMs: number;
  /** `thread`: the store's renewal thread renews the leases (`RunLeases.leaseRenewalThread`). */
  renewal: 'thread' | 'loop';
  random: () => number;
  generateId: IdGenerator;
  /** The runtime's clock in milliseconds. */
  now: () => number;
  /** Raised when the runtime closes: the worker's warnings stop, and waiting requests end. */
  closed: AbortSignal;
  /** The live runs, read when a lease event or a request comes (they are built with this worker). */
  runs: () => TenureHost;
  /** Metrics: renewals that did not renew a lease. */
  telemetry?: RunTelemetry | undefined;
}

/**
 * A runtime's worker on a shared store (architecture/workers.md, "The runtime side"): it drives
 * a run only under its lease (`WorkerLeases`: taken before the run is started or rebuilt,
 * stamped on each of its facts, released when it parks, handed over on `close()`), takes the
 * requests other workers post to the inbox of each run it drives (`InboxTaker`), lets the
 * handles of a run it does not drive follow the run through the store (`RunFollowers`), takes
 * over the runs whose lease expired, and routes this runtime's requests to wherever the run is
 * driven (`RequestRouter`). A renewal, scan or takeover that fails is a process warning
 * (`TURNLOG_WORKER_ERROR`), retried at the next tick, and silent once the runtime closes.
 */
export class WorkerTenure implements RunTenure {
  readonly shared = true;
  readonly id: string;
  readonly leaseMs: number;
  readonly #store: SharedStore;
  readonly #closed: AbortSignal;
  readonly #runs: () => TenureHost;
  readonly #leases: WorkerLeases;
  readonly #followers: RunFollowers;
  readonly #inbox: InboxTaker;
  readonly #router: RequestRouter;

  constructor(options: WorkerTenureOptions) {
    const { store, id, leaseMs, runs, generateId } = options;
    this.id = id;
    this.leaseMs = leaseMs;
    this.#store = store;
    this.#closed = options.closed;
    this.#runs = runs;
    const onError = (error: unknown) => this.warn(error);
    const { telemetry } = options;
    this.#leases = new WorkerLeases({
      store,
      workerId: id,
      leaseMs,
      random: options.random,
      now: options.now,
      onLost: (lease) => {
        telemetry?.renewalsMissed(1);
        this.#lost(lease);
      },
      onTakenOver: (lease) => this.#takeOver(lease),
      onError,
      thread: options.renewal === 'thread' ? store.leaseRenewalThread?.() : undefined,
      ...(telemetry && { onRenewalFailed: (count: number) => telemetry.renewalsMissed(count) }),
    });
    this.#followers = new RunFollowers({ store, runs, onError });
    this.#inbox = new InboxTaker({ store, leases: this.#leases, runs, generateId, onError });
    this.#router = new RequestRouter({
      store,
      workerId: id,
      leaseMs,
      generateId: (prefix) => `${id}:${generateId(prefix)}`,
      runs,
      closed: options.closed,
    });
  }

  /** Where this worker's leases are renewed from now (`WorkerLeases.renewal`). */
  get renewal(): 'thread' | 'loop' {
    return this.#leases.renewal;
  }

  /**
   * The store as this worker's drivers append to it: a renewal that is due is made before and
   * after each append (`WorkerLeases.renewIfDue`), so a long append never lets a lease lapse
   * for want of a renewal its timer could not make.
   */
  renewingAround(store: SharedStore): SharedStore {
    const leases = this.#leases;
    return new Proxy(store, {
      get(target, key) {
        const value = Reflect.get(target, key, target);
        if (typeof value !== 'function') return value;
        if (key !== 'append') return value.bind(target);
        return async (...args: Parameters<SharedStore['append']>) => {
          await leases.renewIfDue();
          const result = await target.append(...args);
          await leases.renewIfDue();
          return result;
        };
      },
    });
  }

  /** Does a request on the session's unfinished run wherever it is driven (`RequestRouter`). */
  route(sessionId: string, request: RunRequest): Promise<void> {
    return this.#router.route(sessionId, request);
  }

  runsToRecover(): Promise<OpenRun[]> {
    return this.#store.unattendedRuns();
  }

  async claim(ids: RunIds): Promise<void> {
    const lease = await this.#leases.acquire(ids.sessionId, ids.runId);
    if (!isGranted(lease)) throw new Error(`turnlog: new run ${ids.runId} is leased already`);
  }

  async load(request: {
    machine: TurnMachine;
    sessionId: string;
    runId: string | undefined;
  }): Promise<LoadedTenure> {
    const { sessionId } = request;
    let claimed: string | undefined;
    const loaded = await loadRun<RunLeaseState>({
      store: this.#store,
      ...request,
      claim: async (target: string) => {
        const lease = await this.#leases.acquire(sessionId, target);
        if (!isGranted(lease)) return lease;
        claimed = target;
        return true;
      },
    });
    if (claimed !== undefined && (loaded === undefined || 'damage' in loaded)) {
      // Ended meanwhile, or damaged: nobody drives it (a damaged run is never taken over).
      await this.#leases.release(claimed);
    }
    return loaded;
  }

  token(ids: RunIds): LeaseToken {
    const lease = this.#leases.held(ids.runId);
    // Lost since it was taken (a renewal came too late): somebody else's to drive now.
    if (lease === undefined) throw lostLease(this.id, ids, undefined);
    return { workerId: this.id, leaseEpoch: lease.epoch };
  }

  follow(ids: RunIds): void {
    this.#followers.follow(ids);
  }

  unfollow(ids: RunIds): void {
    this.#followers.stop(ids.runId);
  }

  drive(ids: RunIds, driver: RunDriver): void {
    this.#followers.drivenHere(ids, driver.facts());
    this.#inbox.take(ids, driver);
  }

  takeUp(ids: RunIds, driver: RunDriver): Promise<boolean> {
    return this.#inbox.takeUp(ids, driver);
  }

  async leave(ids: RunIds, driver: RunDriver, reason: LeaveReason): Promise<void> {
    this.#inbox.drop(driver);
    switch (reason) {
      case 'parked':
        // Nobody drives it now: its handles follow it, and the next request for it takes the lease.
        this.#followers.follow(ids);
        await this.#leases.release(ids.runId);
        return;
      case 'ended':
        // Its lease ended with run.ended, in the same write (or its driver failed).
        this.#followers.stop(ids.runId);
        this.#forgetLease(driver);
        return;
      case 'lost':
        this.#forgetLease(driver);
        this.#followers.follow(ids);
        return;
      case 'unstarted': {
        // Nothing of it is in the log: nobody is to take it over.
        this.#followers.stop(ids.runId);
        const lease = this.#forgetLease(driver);
        if (lease !== undefined) await this.#store.releaseLease({ lease }).catch(() => false);
        return;
      }
      default: {
        const unknown: never = reason;
        throw new Error(`worker: unknown reason ${String(unknown)}`);
      }
    }
  }

  supersede(driver: RunDriver): boolean {
    const held = this.#leases.held(driver.runId);
    const epoch = driver.token?.leaseEpoch;
    if (held === undefined || held.epoch === epoch) return false;
    driver.fail(lostLease(this.id, driver, epoch));
    return true;
  }

  isLost(error: unknown): boolean {
    return LeaseLostError.isInstance(error);
  }

  warn(error: unknown): void {
    if (this.#closed.aborted) return;
    const reason = error instanceof Error ? error.message : String(error);
    process.emitWarning(`turnlog worker ${this.id}: ${reason}; retried at the next tick`, {
      code: 'TURNLOG_WORKER_ERROR',
    });
  }

  async close(): Promise<void> {
    this.#inbox.close();
    await this.#leases.close();
    this.#followers.close();
  }

  /** Forgets the lease the driver worked under, unless this worker holds a newer one already. */
  #forgetLease(driver: RunDriver): RunLease | undefined {
    const lease = this.#leases.held(driver.runId);
    if (lease === undefined || lease.epoch !== driver.token?.leaseEpoch) return undefined;
    this.#leases.forget(driver.runId);
    return lease;
  }

  /**
   * A renewal found a lease this worker held lost: the run's driver fails with `LeaseLostError`
   * (its actor stops, nothing more of it is appended) and its handle follows the run.
   */
  #lost({ sessionId, runId, epoch }: RunLease): void {
    const driver = this.#runs().driverOf(sessionId);
    if (driver?.runId === runId && driver.token?.leaseEpoch === epoch) {
      driver.fail(lostLease(this.id, driver, epoch));
    }
  }

  /** The scan took over a run whose lease had expired: recover it, as `recover()` would. */
  #takeOver({ sessionId, runId }: RunLease): void {
    const runs = this.#runs();
    runs
      .withSession(sessionId, () => runs.recover(sessionId, runId))
      .catch((error) => {
        this.warn(error);
      });
  }
}
