import { md5, type PgPoolClient, type PostgresSchema } from './postgres-connection.ts';

/** Notification kinds: facts appended, an inbox request posted, an inbox request settled. */
export type NotificationKind = 'f' | 'i' | 'o';

const firstRetryMs = 50;
const maxRetryMs = 2_000;

/**
 * The channel of one key's notifications of one kind: the schema's channel, the kind, and the
 * first 30 hex digits of the key's MD5 (63 bytes, PostgreSQL's longest name). A channel per
 * session (facts `f`, inbox posts `i`) or per request (settlements `o`), so a store receives the
 * notifications of what it listens to and none of the others: every append's notification went
 * to every worker when the schema had one channel (issue 26, item 3). Two keys sharing a channel
 * would only wake each other's readers.
 */
export function notificationChannel(
  schema: PostgresSchema,
  kind: NotificationKind,
  key: string,
): string {
  return `${schema.channel}${kind}${md5(key).slice(0, 30)}`;
}

/** One channel's handlers, and its LISTEN on the current connection (unset until sent). */
interface Channel {
  handlers: Set<(detail: string) => void>;
  listened: Promise<void> | undefined;
}

/**
 * The store's LISTEN connection: one pooled connection, LISTENing on the channel of each key that
 * has a handler (`notificationChannel`) from the first `ready` of it until its last handler is
 * removed, and dispatching each payload (the detail) to the handlers of its channel. When the
 * connection drops it reconnects (backing off up to 2 s), LISTENs on every channel again, and
 * then calls the reconnect handlers: the notifications sent meanwhile are lost, so every
 * consumer catches up by reading.
 */
export class PostgresNotifications {
  readonly #connectClient: () => Promise<PgPoolClient>;
  readonly #schema: PostgresSchema;
  readonly #channels = new Map<string, Channel>();
  readonly #reconnectHandlers = new Set<() => void>();
  #listener: Listener | undefined;
  #connecting: Promise<Listener> | undefined;
  #retryMs = firstRetryMs;
  #retryTimer: ReturnType<typeof setTimeout> | undefined;
  #closed = false;

  constructor(options: { connect: () => Promise<PgPoolClient>; schema: PostgresSchema }) {
    this.#connectClient = options.connect;
    this.#schema = options.schema;
  }

  /**
   * Resolves once the key's channel is LISTENed on (call it after `listen`): every notification
   * of the key committed after that is delivered.
   */
  async ready(kind: NotificationKind, key: string): Promise<void> {
    const name = notificationChannel(this.#schema, kind, key);
    const listener = this.#listener ?? (await this.#connected());
    const channel = this.#channels.get(name);
    if (channel === undefined) return;
    if (channel.listened === undefined) {
      const listened = listener.send([`LISTEN "${name}"`]);
      channel.listened = listened;
      // A LISTEN refused (not a dropped connection, which resets every channel): send it again.
      listened.catch(() => {
        if (channel.listened === listened) channel.listened = undefined;
      });
    }
    await channel.listened;
  }

  /** Calls `handler` with the detail of each notification of the key; returns its remover. */
  listen(kind: NotificationKind, key: string, handler: (detail: string) => void): () => void {
    const name = notificationChannel(this.#schema, kind, key);
    let channel = this.#channels.get(name);
    if (channel === undefined) {
      channel = { handlers: new Set(), listened: undefined };
      this.#channels.set(name, channel);
    }
    const added = channel;
    const entry = (detail: string) => handler(detail);
    added.handlers.add(entry);
    return () => {
      if (!added.handlers.delete(entry) || added.handlers.size > 0) return;
      if (this.#channels.get(name) === added) this.#channels.delete(name);
      // After a LISTEN sent on this connection (a new one LISTENs only on the channels left).
      if (added.listened !== undefined && this.#listener !== undefined) {
        this.#listener.send([`UNLISTEN "${name}"`]).catch(() => {});
      }
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
    const listener = this.#listener;
    this.#listener = undefined;
    if (listener === undefined) return;
    // UNLISTEN before the connection goes back to a pool that may be the caller's.
    const failed = await listener.send(['UNLISTEN *']).then(
      () => undefined,
      (error: Error) => error,
    );
    listener.client.release(failed);
  }

  /** The LISTEN connection, opened (LISTENing on every channel so far) when there is none. */
  #connected(): Promise<Listener> {
    if (this.#listener !== undefined) return Promise.resolve(this.#listener);
    this.#connecting ??= this.#connect().finally(() => {
      this.#connecting = undefined;
    });
    return this.#connecting;
  }

  async #connect(): Promise<Listener> {
    const client = await this.#connectClient();
    if (this.#closed) {
      client.release();
      throw new Error('the store closed while its LISTEN connection opened');
    }
    client.on('notification', (message) => this.#dispatch(message.channel, message.payload));
    client.on('error', (error) => this.#drop(client, error));
    client.on('end', () => this.#drop(client, new Error('the LISTEN connection ended')));
    // Every channel so far in one statement; a channel added meanwhile LISTENs in its `ready`.
    const names = [...this.#channels.keys()];
    const listener = new Listener(client);
    const listened = listener.send(names.map((name) => `LISTEN "${name}"`));
    for (const name of names) (this.#channels.get(name) as Channel).listened = listened;
    try {
      await listened;
    } catch (error) {
      for (const channel of this.#channels.values())
        if (channel.listened === listened) channel.listened = undefined;
      client.release(error as Error);
      throw error;
    }
    this.#listener = listener;
    this.#retryMs = firstRetryMs;
    // A channel whose last handler went while the LISTEN was in flight: nobody listens to it.
    const gone = names.filter((name) => this.#channels.get(name)?.listened !== listened);
    listener.send(gone.map((name) => `UNLISTEN "${name}"`)).catch(() => {});
    return listener;
  }

  #dispatch(name: string, payload: string | undefined): void {
    const channel = this.#channels.get(name);
    if (channel === undefined) return;
    for (const handler of [...channel.handlers]) handler(payload ?? '');
  }

  #drop(client: PgPoolClient, error: Error): void {
    if (this.#listener?.client !== client) return;
    this.#listener = undefined;
    for (const channel of this.#channels.values()) channel.listened = undefined;
    client.release(error);
    this.#scheduleReconnect();
  }

  #scheduleReconnect(): void {
    if (this.#closed || this.#retryTimer !== undefined) return;
    const delay = this.#retryMs;
    this.#retryMs = Math.min(this.#retryMs * 2, maxRetryMs);
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = undefined;
      this.#connected().then(
        () => {
          for (const handler of [...this.#reconnectHandlers]) handler();
        },
        () => this.#scheduleReconnect(),
      );
    }, delay);
    this.#retryTimer.unref();
  }
}

/**
 * The LISTEN connection and its statements (LISTEN, UNLISTEN), one query at a time: those asked
 * for while one is in flight go together in the next (a worker taking 64 runs at once LISTENs on
 * their inboxes in a few round trips, not 64).
 */
class Listener {
  readonly client: PgPoolClient;
  #waiting: { statements: readonly string[]; done: (error: Error | undefined) => void }[] = [];
  #sending = false;

  constructor(client: PgPoolClient) {
    this.client = client;
  }

  /** Resolves once the statements ran; rejects when their query failed. None: resolved. */
  send(statements: readonly string[]): Promise<void> {
    if (statements.length === 0) return Promise.resolve();
    return new Promise((resolve, reject) => {
      this.#waiting.push({
        statements,
        done: (error) => (error === undefined ? resolve() : reject(error)),
      });
      if (!this.#sending) void this.#sendWaiting();
    });
  }

  async #sendWaiting(): Promise<void> {
    this.#sending = true;
    while (this.#waiting.length > 0) {
      const batch = this.#waiting.splice(0);
      const error = await this.client
        .query(batch.flatMap((entry) => entry.statements).join('; '))
        .then(
          () => undefined,
          (failed: Error) => failed,
        );
      for (const entry of batch) entry.done(error);
    }
    this.#sending = false;
  }
}
