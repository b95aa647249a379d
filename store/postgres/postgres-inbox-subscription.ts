import type { InboxItem } from '../run-inbox.ts';
import type { PostgresNotifications } from './postgres-notifications.ts';

/**
 * One `subscribeInbox` of `postgresStore`: hands each pending request of a session to the
 * listener once, oldest first. It reads the pending rows once LISTEN is active, and again on each
 * post notification (on the session's inbox channel, `notificationChannel(schema, 'i', session)`) and each reconnect, so a missed notification only delays
 * a delivery. One read at a time; a wake-up during a read makes it read once more.
 */
export class InboxSubscription {
  readonly #listener: (item: InboxItem) => void;
  readonly #notifications: PostgresNotifications;
  /** The session's pending requests, oldest first. */
  readonly #readPending: () => Promise<InboxItem[]>;
  readonly #isClosed: () => boolean;
  readonly #delivered = new Set<string>();
  readonly #stopListening: () => void;
  readonly #stopReconnect: () => void;
  readonly #sessionId: string;
  #active = true;
  #reading: Promise<void> | undefined;
  #again = false;

  constructor(options: {
    sessionId: string;
    listener: (item: InboxItem) => void;
    notifications: PostgresNotifications;
    readPending: () => Promise<InboxItem[]>;
    isClosed: () => boolean;
  }) {
    this.#listener = options.listener;
    this.#notifications = options.notifications;
    this.#readPending = options.readPending;
    this.#isClosed = options.isClosed;
    this.#sessionId = options.sessionId;
    this.#stopListening = this.#notifications.listen('i', options.sessionId, () => this.#catchUp());
    this.#stopReconnect = this.#notifications.onReconnect(() => this.#catchUp());
    this.#catchUp();
  }

  /** Ends the subscription: nothing more is delivered. */
  stop(): void {
    this.#active = false;
    this.#stopListening();
    this.#stopReconnect();
  }

  #catchUp(): void {
    if (!this.#active || this.#isClosed()) return;
    if (this.#reading !== undefined) {
      this.#again = true;
      return;
    }
    this.#reading = this.#notifications
      .ready('i', this.#sessionId)
      .then(() => this.#deliverPending())
      .catch(() => {
        // The next notification or reconnect reads again.
      })
      .finally(() => {
        this.#reading = undefined;
      });
  }

  async #deliverPending(): Promise<void> {
    const listener = this.#listener;
    do {
      this.#again = false;
      const items = await this.#readPending();
      for (const item of items) {
        if (!this.#active || this.#delivered.has(item.id)) continue;
        this.#delivered.add(item.id);
        reportThrow(() => listener(item), item);
      }
    } while (this.#again && this.#active);
  }
}

function reportThrow(call: () => void, item: InboxItem): void {
  try {
    call();
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    process.emitWarning(
      `turnlog store: an inbox subscriber of session ${item.sessionId} threw on request ${item.id} (${reason}); the request stays pending until it is settled`,
      { code: 'TURNLOG_LISTENER_ERROR' },
    );
  }
}
