import { createServer, type Server, type Socket, connect as tcpConnect } from 'node:net';

/** What the proxy does with connections: pass bytes, hang up after the greeting, or hold them. */
export type ProxyMode = 'pass' | 'cut-after-greeting' | 'wedged';

/**
 * A TCP proxy in front of the tests' PostgreSQL, to play the database's failures exactly:
 * - `pass`: bytes flow both ways;
 * - `cut-after-greeting`: every connection open now is cut (a restart), and each new one gets
 *   the server's greeting up to its ReadyForQuery followed, in the same packet, by the
 *   `57P01 terminating connection due to administrator command` a restart sends, then the
 *   connection ends;
 * - `wedged`: nothing more is passed either way, and new connections are accepted and never
 *   answered (a SIGSTOPped server, or one that accepts and never answers).
 */
export class PostgresProxy {
  readonly #server: Server;
  readonly #target: { host: string; port: number };
  readonly #pairs = new Set<{ client: Socket; upstream: Socket }>();
  #mode: ProxyMode = 'pass';

  private constructor(server: Server, target: { host: string; port: number }) {
    this.#server = server;
    this.#target = target;
    server.on('connection', (client) => this.#accept(client));
  }

  /** Starts a proxy to the database of `url`; `url()` then names the proxy instead. */
  static async start(url: string): Promise<PostgresProxy> {
    const parsed = new URL(url);
    const server = createServer();
    const proxy = new PostgresProxy(server, {
      host: parsed.hostname,
      port: Number(parsed.port || 5432),
    });
    proxy.#databaseUrl = parsed;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return proxy;
  }

  #databaseUrl: URL | undefined;

  /** The connection string of the database, through the proxy. */
  url(): string {
    const url = new URL(String(this.#databaseUrl));
    const address = this.#server.address();
    url.hostname = '127.0.0.1';
    url.port = String(typeof address === 'object' && address !== null ? address.port : 0);
    return url.toString();
  }

  /** Connections currently held open through the proxy. */
  get connections(): number {
    return this.#pairs.size;
  }

  /** Switches mode; `cut-after-greeting` also cuts every connection open now. */
  setMode(mode: ProxyMode): void {
    this.#mode = mode;
    if (mode === 'cut-after-greeting') {
      for (const pair of this.#pairs) {
        pair.client.destroy();
        pair.upstream.destroy();
      }
    }
    if (mode === 'wedged') {
      for (const { client, upstream } of this.#pairs) {
        client.unpipe();
        upstream.unpipe();
        client.pause();
        upstream.pause();
      }
    }
  }

  async close(): Promise<void> {
    for (const { client, upstream } of this.#pairs) {
      client.destroy();
      upstream.destroy();
    }
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #accept(client: Socket): void {
    client.on('error', () => {});
    if (this.#mode === 'wedged') {
      // Accepted, never answered; held until the proxy closes.
      const pair = { client, upstream: client };
      this.#pairs.add(pair);
      client.on('close', () => this.#pairs.delete(pair));
      return;
    }
    const upstream = tcpConnect(this.#target);
    upstream.on('error', () => client.destroy());
    const pair = { client, upstream };
    this.#pairs.add(pair);
    const drop = () => {
      this.#pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('close', drop);
    upstream.on('close', drop);
    client.pipe(upstream);
    if (this.#mode === 'cut-after-greeting') this.#cutAfterGreeting(client, upstream);
    else upstream.pipe(client);
  }

  /**
   * Passes the server's greeting (authentication included) up to its ReadyForQuery, which goes
   * out in one write with 57P01 after it; then the connection ends.
   */
  #cutAfterGreeting(client: Socket, upstream: Socket): void {
    let pending = Buffer.alloc(0);
    upstream.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      const { complete, readyAt } = completeMessages(pending);
      if (readyAt === undefined) {
        // Whole messages before ReadyForQuery go on (an authentication exchange needs them).
        client.write(pending.subarray(0, complete));
        pending = pending.subarray(complete);
        return;
      }
      client.end(Buffer.concat([pending.subarray(0, readyAt), adminShutdown()]));
      upstream.destroy();
    });
  }
}

/**
 * In a server stream: the length of its complete messages, and the end of the first
 * ReadyForQuery ('Z') among them, if any.
 */
function completeMessages(stream: Buffer): { complete: number; readyAt: number | undefined } {
  let offset = 0;
  while (offset + 5 <= stream.length) {
    const end = offset + 1 + stream.readInt32BE(offset + 1);
    if (end > stream.length) break;
    if (stream[offset] === 0x5a) return { complete: end, readyAt: end };
    offset = end;
  }
  return { complete: offset, readyAt: undefined };
}

/** The ErrorResponse a server sends to the sessions it ends on a fast shutdown or restart. */
function adminShutdown(): Buffer {
  const fields = [
    ['S', 'FATAL'],
    ['V', 'FATAL'],
    ['C', '57P01'],
    ['M', 'terminating connection due to administrator command'],
  ];
  const body = Buffer.concat([
    ...fields.map(([key, value]) => Buffer.from(`${key}${value}\0`)),
    Buffer.from([0]),
  ]);
  const header = Buffer.alloc(5);
  header.write('E', 0);
  header.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([header, body]);
}
