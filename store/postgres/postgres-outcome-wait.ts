import { StoreInputError } from '../event-store.ts';
import type { InboxItem, InboxOutcome } from '../run-inbox.ts';
import type { PostgresNotifications } from './postgres-notifications.ts';

/**
 * One `waitForInboxOutcome` of `postgresStore`: reads the request once LISTEN is active, and
 * again on each settlement notification (on the request's channel, `notificationChannel(schema, 'o', id)`) and each reconnect, until it is settled;
 * a failed read waits for the next of them. It ends early when the signal aborts or the store
 * closes (`close`), and then stops listening like a settled one.
 */
export class OutcomeWait {
  /** Resolves with the stored outcome; rejects for an unknown id, the signal's reason, or the close. */
  readonly outcome: Promise<InboxOutcome>;
  readonly #id: string;
  readonly #readRequest: () => Promise<InboxItem | undefined>;
  readonly #signal: AbortSignal | undefined;
  /** The inbox's open waits, which its close ends; this one is in it until it ends. */
  readonly #waits: Set<OutcomeWait>;
  readonly #stopListening: () => void;
  readonly #stopReconnect: () => void;
  #resolve: (outcome: InboxOutcome) => void = () => {};
  #reject: (error: unknown) => void = () => {};
  #ended = false;
  readonly #onAbort = () => this.#fail(this.#signal?.reason);

  constructor(options: {
    id: string;
    signal: AbortSignal | undefined;
    notifications: PostgresNotifications;
    readRequest: () => Promise<InboxItem | undefined>;
    waits: Set<OutcomeWait>;
  }) {
    this.outcome = new Promise<InboxOutcome>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    const { id, signal, notifications } = options;
    this.#id = id;
    this.#readRequest = options.readRequest;
    this.#signal = signal;
    this.#waits = options.waits;
    this.#waits.add(this);
    this.#stopListening = notifications.listen('o', id, () => this.#check());
    this.#stopReconnect = notifications.onReconnect(() => this.#check());
    if (signal?.aborted) {
      this.#onAbort();
      return;
    }
    signal?.addEventListener('abort', this.#onAbort, { once: true });
    notifications.ready('o', id).then(
      () => this.#check(),
      (error: unknown) => this.#fail(error),
    );
  }

  /** Ends the wait with `error` (the store closed). */
  close(error: Error): void {
    this.#fail(error);
  }

  #check(): void {
    if (this.#ended) return;
    this.#readRequest().then(
      (item) => {
        if (item === undefined) {
          this.#fail(
            new StoreInputError({
              message: `postgresStore.waitForInboxOutcome: no request has id ${this.#id}; post it with postToInbox first`,
              sessionId: undefined,
            }),
          );
        } else if (item.outcome !== undefined) {
          this.#succeed(item.outcome);
        }
      },
      // A failed read is retried by the next notification or reconnect.
      () => {},
    );
  }

  #succeed(outcome: InboxOutcome): void {
    if (this.#end()) this.#resolve(outcome);
  }

  #fail(error: unknown): void {
    if (this.#end()) this.#reject(error);
  }

  /** Stops listening, once: true the first time. */
  #end(): boolean {
    if (this.#ended) return false;
    this.#ended = true;
    this.#waits.delete(this);
    this.#stopListening();
    this.#stopReconnect();
    this.#signal?.removeEventListener('abort', this.#onAbort);
    return true;
  }
}
