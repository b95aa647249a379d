import type { PgPoolClient } from './postgres-connection.ts';

/** Notification kinds: facts appended, an inbox request posted, an inbox request settled. */
export type NotificationKind = 'f' | 'i' | 'o';

const firstRetryMs = 50;
const maxRetryMs = 2_000;

/**
 * The store's LISTEN connection: one pooled connection held for LISTEN on the schema's channel,
 * dispatching each payload `kind:key:detail` to the handlers of `kind:key`. When the connection
 * drops it reconnects (backing off up to 2 s) and then calls the reconnect handlers: the
 * notifications sent meanwhile are lost, so every consumer catches up by reading.
 */
export class PostgresNotifications {
  readonly #connectClient: () => Promise<PgPoolClient>;
  readonly #channel: string;
  readonly #handlers = new Map<string, Set<(detail: string) => void>>();
  readonly #reconnectHandlers = new Set<() => void>();
  #client: PgPoolClient | undefined;
  #connecting: Promise<void> | undefined;
  #retryMs = firstRetryMs;
  #retryTimer: ReturnType<typeof setTimeout> | undefined;
  #closed = false;

  constructor(options: { connect: () => Promise<PgPoolClient>; channel: string }) {
    this.#connectClient = options.connect;
    this.#channel = options.channel;
  }

  /** Resolves once LISTEN is active: every notification committed after that is delivered. */
  ready(): Promise<void> {
    if (this.#client !== undefined) return Promise.resolve();
    this.#connecting ??= this.#connect().finally(() => {
      this.#connecting = undefined;
    });
    return this.#connecting;
  }

  /** Calls `handler` with the detail of each `kind:key:detail` notification; returns its remover. */
  listen(kind: NotificationKind, key: string, handler: (detail: string) => void): () => void {
    const name = `${kind}:${key}`;
    let handlers = this.#handlers.get(name);
    if (handlers === undefined) {
      handlers = new Set();
      this.#handlers.set(name, handlers);
    }
    const entry = (detail: string) => handler(detail);
    handlers.add(entry);
    return () => {
      const current = this.#handlers.get(name);
      current?.delete(entry);
      if (current?.size === 0) this.#handlers.delete(name);
    };
  }

  /** Calls `handler` after each reconnect (notifications may have been lost); returns its remover. */
  onReconnect(handler: () => void): () => void {
    const entry = () => handler();
    this.#reconnectHandlers.add(entry);
    return () => this.#reconnectHandlers.delete(entry);
  }

  /** Stops listening and gives the connection back. */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#retryTimer);
    await this.#connecting?.catch(() => {});
    const client = this.#client;
    this.#client = undefined;
    if (client === undefined) return;
    // UNLISTEN before the connection goes back to a pool that may be the caller's.
    const failed = await client.query('UNLISTEN *').then(
      () => undefined,
      (error: Error) => error,
    );
    client.release(failed);
  }

  async #connect(): Promise<void> {
    const client = await this.#connectClient();
    if (this.#closed) {
      client.release();
      return;
    }
    client.on('notification', (message) => {
      if (message.channel === this.#channel) this.#dispatch(message.payload ?? '');
    });
    client.on('error', (error) => this.#drop(client, error));
    client.on('end', () => this.#drop(client, new Error('the LISTEN connection ended')));
    try {
      await client.query(`LISTEN "${this.#channel}"`);
    } catch (error) {
      client.release(error as Error);
      throw error;
    }
    this.#client = client;
    this.#retryMs = firstRetryMs;
  }

  #dispatch(payload: string): void {
    const [kind, key, ...rest] = payload.split(':');
    const handlers = this.#handlers.get(`${kind}:${key}`);
    if (handlers === undefined) return;
    const detail = rest.join(':');
    for (const handler of [...handlers]) handler(detail);
  }

  #drop(client: PgPoolClient, error: Error): void {
    if (this.#client !== client) return;
    this.#client = undefined;
    client.release(error);
    this.#scheduleReconnect();
  }

  #scheduleReconnect(): void {
    if (this.#closed || this.#retryTimer !== undefined) return;
    const delay = this.#retryMs;
    this.#retryMs = Math.min(this.#retryMs * 2, maxRetryMs);
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = undefined;
      this.ready().then(
        () => {
          for (const handler of [...this.#reconnectHandlers]) handler();
        },
        () => this.#scheduleReconnect(),
      );
    }, delay);
    this.#retryTimer.unref();
  }
}
