import type { JsonObject } from '../events/json.ts';
import type { RunLease } from './run-leases.ts';

/** What a request asks of a run's driver: the runtime operation it stands for. */
export type InboxRequestKind = 'decide' | 'steer' | 'stop';

/** A request for a run, handed through the store to the worker that drives it. */
export interface InboxRequest {
  /**
   * Chosen by the sender, unique in the store. Posting a known id again is a no-op (a retry);
   * the driver gives the fact it commits for the request this id, so doing it twice is a no-op too.
   */
  id: string;
  sessionId: string;
  runId: string;
  kind: InboxRequestKind;
  /** The operation's arguments (plain JSON), as given to `decide`/`steer`/`stop`. */
  input: JsonObject;
  /** The sending worker, for the record. */
  postedBy: string | undefined;
}

/** How a request ended: taken (its fact is in the log) or refused with the error the driver met. */
export type InboxOutcome =
  | { status: 'accepted'; workerId: string; epoch: number }
  | {
      status: 'refused';
      /** The error the operation threw on the driver: rebuild it from `name` for the caller. */
      error: { name: string; message: string };
      workerId: string;
      epoch: number;
    };

/** A posted request as stored. */
export interface InboxItem extends InboxRequest {
  /** When it was posted, in ms since the epoch, by the database's clock. */
  postedAtMs: number;
  /** `undefined` while pending. */
  outcome: InboxOutcome | undefined;
}

/**
 * A durable inbox per run, for stores shared by several workers: a worker that does not drive a
 * run posts a `decide`/`steer`/`stop` for it, the run's driver (whoever holds its lease, also
 * after a takeover) gets it, does it, and settles it; the sender waits for the outcome. Nothing
 * is lost (the row outlives both sides) or done twice (one settlement per request, and the fact
 * it leads to is committed under the request's id).
 *
 * @example
 * // worker B, which does not drive the run:
 * await store.postToInbox({ id, sessionId, runId, kind: 'steer', input: { text }, postedBy: 'B' });
 * const outcome = await store.waitForInboxOutcome(id, { signal: AbortSignal.timeout(30_000) });
 * // worker A, the driver:
 * store.subscribeInbox(sessionId, async (item) => {
 *   const outcome = await perform(item); // commits its fact under the lease, with id item.id
 *   await store.settleInboxItem({ id: item.id, lease, outcome });
 * });
 */
export interface RunInbox {
  /** Stores a request and wakes the run's driver. A known `id` with the same request is a no-op. */
  postToInbox(request: InboxRequest): Promise<void>;
  /** Pending requests of a session (of one run, when `runId` is given), oldest first. */
  pendingInbox(options: { sessionId: string; runId?: string }): Promise<InboxItem[]>;
  /**
   * Calls `listener` with each pending request of the session: those already waiting, then each
   * posted later, once per subscription, oldest first. Returns the unsubscribe function.
   */
  subscribeInbox(sessionId: string, listener: (item: InboxItem) => void): () => void;
  /**
   * Settles a pending request under the driver's lease (checked in the same transaction: a driver
   * that lost the run gets `LeaseLostError` and the request stays pending for the next driver).
   * The first settlement wins: resolves with the outcome now stored.
   */
  settleInboxItem(options: {
    id: string;
    lease: RunLease;
    outcome:
      | { status: 'accepted' }
      | { status: 'refused'; error: { name: string; message: string } };
  }): Promise<InboxOutcome>;
  /** The request as stored, or `undefined` for an unknown id. */
  inboxItem(id: string): Promise<InboxItem | undefined>;
  /** Resolves with the request's outcome once it is settled; rejects with `signal`'s reason. */
  waitForInboxOutcome(id: string, options?: { signal?: AbortSignal }): Promise<InboxOutcome>;
}
