import type { IdGenerator } from '../../../events/ids.ts';
import type { InboxItem, RunInbox } from '../../../store/run-inbox.ts';
import { LeaseLostError } from '../../../store/run-leases.ts';
import type { RunDriver } from '../run-driver.ts';
import type { RunIds } from '../run-handles.ts';
import { isRefusal, performRequest, type RunRequest } from '../run-requests.ts';
import type { TenureHost } from '../run-tenure.ts';
import type { SharedStore, WorkerLeases } from './worker-leases.ts';

/** A run's inbox subscription, held for the driver that drives the run here. */
interface InboxSubscription {
  driver: RunDriver;
  unsubscribe: () => void;
}

/** How a request ended, as its driver settles it. */
type Settlement = Parameters<RunInbox['settleInboxItem']>[0]['outcome'];

/**
 * The inboxes of the runs a worker drives (architecture/workers.md, "The inbox while driving"):
 * each request another worker posts for a run driven here is performed under the session's lock
 * and settled under the lease. A request for an earlier run of the session is left alone (its
 * sender learns the outcome from the log). A request the worker cannot do for a reason that is
 * not the request's (the lease was lost, the store failed), or that finds the run driven here no
 * more, stays pending for the run's next driver.
 */
export class InboxTaker {
  readonly #store: SharedStore;
  readonly #leases: WorkerLeases;
  readonly #runs: () => TenureHost;
  readonly #generateId: IdGenerator;
  readonly #onError: (error: unknown) => void;
  // Per run driven here.
  readonly #subscriptions = new Map<string, InboxSubscription>();

  constructor(options: {
    store: SharedStore;
    leases: WorkerLeases;
    /** The live runs, read when a request comes. */
    runs: () => TenureHost;
    generateId: IdGenerator;
    onError: (error: unknown) => void;
  }) {
    this.#store = options.store;
    this.#leases = options.leases;
    this.#runs = options.runs;
    this.#generateId = options.generateId;
    this.#onError = options.onError;
  }

  /** The driver drives the run here: the requests posted to the session's inbox come to it. */
  take(ids: RunIds, driver: RunDriver): void {
    const unsubscribe = this.#store.subscribeInbox(ids.sessionId, (item) =>
      this.#takeRequest(ids, item),
    );
    this.#subscriptions.set(ids.runId, { driver, unsubscribe });
  }

  /** The driver drives the run here no more: its inbox subscription ends. */
  drop(driver: RunDriver): void {
    const subscription = this.#subscriptions.get(driver.runId);
    if (subscription?.driver !== driver) return;
    subscription.unsubscribe();
    this.#subscriptions.delete(driver.runId);
  }

  /**
   * Under the session's lock, before the live runs drop the parked run: does the requests
   * pending in its inbox now, on `driver`, oldest first, instead of waiting for the
   * subscription to deliver them (it may deliver them only after the run was dropped). True when
   * there was one. A request its subscription delivers too is a no-op then (its fact is logged).
   */
  async takeUp(ids: RunIds, driver: RunDriver): Promise<boolean> {
    if (this.#subscriptions.get(ids.runId)?.driver !== driver) return false;
    const pending = await this.#store.pendingInbox({ sessionId: ids.sessionId, runId: ids.runId });
    for (const item of pending) await this.#performAndSettle(ids, item);
    return pending.length > 0;
  }

  /** Ends every inbox subscription (the runtime closes). */
  close(): void {
    for (const { unsubscribe } of this.#subscriptions.values()) unsubscribe();
    this.#subscriptions.clear();
  }

  /** A request another worker posted for a run this worker drives: queued on the session's lock. */
  #takeRequest(ids: RunIds, item: InboxItem): void {
    // A request for an earlier run of the session: its sender learns the outcome from the log.
    if (item.runId !== ids.runId) return;
    const runs = this.#runs();
    runs
      .withSession(ids.sessionId, () => this.#performAndSettle(ids, item))
      .catch((error) => {
        if (!runs.closed && !LeaseLostError.isInstance(error)) this.#onError(error);
      });
  }

  /** Under the session's lock: does the request on the run's live driver, then settles it. */
  async #performAndSettle(ids: RunIds, item: InboxItem): Promise<void> {
    const driver = this.#runs().driverOf(ids.sessionId);
    const lease = this.#leases.held(item.runId);
    // Not driven here any more: the request stays pending for the run's next driver.
    if (driver?.runId !== item.runId || lease === undefined) return;
    let outcome: Settlement;
    try {
      await performRequest(driver, { kind: item.kind, input: item.input } as RunRequest, {
        sessionId: item.sessionId,
        generateId: this.#generateId,
        id: item.id,
      });
      outcome = { status: 'accepted' };
    } catch (error) {
      if (!isRefusal(error)) return this.#onError(error);
      outcome = { status: 'refused', error: { name: error.name, message: error.message } };
    }
    // A request that ended the run also ended its lease: the sender finds its fact in the log.
    const current = this.#leases.held(item.runId);
    if (current === undefined) return;
    await this.#store.settleInboxItem({ id: item.id, lease: current, outcome });
  }
}
