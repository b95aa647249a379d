// Node's `http` server on the Web-standard `Request`/`Response` the trust layer and route
// handlers speak: IncomingMessage → Request (the client's address recorded beside it),
// Response → ServerResponse (streamed with backpressure), a bound on requests per client.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { setClientAddress } from './client-address.ts';
import { hostNameOf } from './host-names.ts';
import {
  errorResponse,
  type HttpErrorListener,
  HttpRefusedError,
  logHttpError,
  refusalResponse,
} from './http-errors.ts';

/**
 * The Web `Request` for a Node request. Its body streams from the socket as the reader pulls
 * (nothing is buffered ahead, nothing decoded: `readJsonBody` decodes the whole body once);
 * cancelling it discards the rest. `clientAddress(request)` is the socket's remote address.
 * A `Host` that is not a host name is a 400 `HttpRefusedError`.
 */
export function toWebRequest(incoming: IncomingMessage): Request {
  const hostHeader = incoming.headers.host ?? 'localhost';
  if (hostNameOf(hostHeader) === undefined) {
    throw new HttpRefusedError({
      reason: 'bad-request',
      message: `The Host header "${hostHeader}" is not a host name.`,
    });
  }
  // The path is appended, never resolved: `//evil.example/x` stays a path of this host.
  const url = new URL(`http://${hostHeader}${(incoming.url ?? '/').replace(/^([^/])/, '/$1')}`);
  const headers = new Headers();
  for (const [name, value] of Object.entries(incoming.headers)) {
    if (value === undefined) continue;
    for (const one of Array.isArray(value) ? value : [value]) headers.append(name, one);
  }
  const method = incoming.method ?? 'GET';
  const hasBody = method !== 'GET' && method !== 'HEAD';
  const request = new Request(url, {
    method,
    headers,
    ...(hasBody ? { body: bodyStream(incoming), duplex: 'half' } : {}),
  } as RequestInit);
  setClientAddress(request, incoming.socket.remoteAddress);
  return request;
}

/** The request's body as a byte stream that pulls from the socket only as it is read. */
function bodyStream(incoming: IncomingMessage): ReadableStream<Uint8Array> {
  // Once the stream is closed, errored or cancelled, the socket's later events are ignored
  // (closing a cancelled stream throws, and would throw out of an event listener).
  let settled = false;
  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        incoming.pause();
        incoming.on('data', (chunk: Buffer) => {
          if (settled) return;
          controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
          if ((controller.desiredSize ?? 0) <= 0) incoming.pause();
        });
        incoming.once('end', () => {
          if (settled) return;
          settled = true;
          controller.close();
        });
        const fail = (error: Error) => {
          if (settled) return;
          settled = true;
          controller.error(error);
        };
        incoming.once('error', fail);
        incoming.once('close', () => {
          if (!incoming.complete) fail(new Error('The client went away.'));
        });
      },
      pull() {
        incoming.resume();
      },
      cancel() {
        // Unread bytes are discarded as they arrive, never kept.
        settled = true;
        incoming.resume();
      },
    },
    { highWaterMark: 64 * 1024, size: (chunk) => chunk.byteLength },
  );
}

/**
 * Writes a Web `Response` to a Node response: status, headers (every `set-cookie`), and the
 * body streamed with backpressure. A client that leaves cancels the body (the producer sees
 * it); a body that fails midway ends the connection.
 */
export async function writeWebResponse(response: Response, outgoing: ServerResponse) {
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of response.headers) if (name !== 'set-cookie') headers[name] = value;
  const cookies = response.headers.getSetCookie();
  if (cookies.length > 0) headers['set-cookie'] = cookies;
  outgoing.writeHead(response.status, headers);
  if (response.body === null) return void outgoing.end();
  // A stream's first bytes may be long in coming: the client learns the status now.
  outgoing.flushHeaders();
  const reader = response.body.getReader();
  const left = new Promise<'left'>((resolve) => outgoing.once('close', () => resolve('left')));
  try {
    while (true) {
      const next = await Promise.race([reader.read(), left]);
      if (next === 'left') {
        await reader.cancel().catch(() => {});
        return;
      }
      if (next.done) break;
      if (!outgoing.write(next.value)) {
        const drained = new Promise<'drained'>((resolve) =>
          outgoing.once('drain', () => resolve('drained')),
        );
        if ((await Promise.race([drained, left])) === 'left') {
          await reader.cancel().catch(() => {});
          return;
        }
      }
    }
    outgoing.end();
  } catch {
    outgoing.destroy();
  }
}

/** Options of `createNodeHandler`. */
export interface NodeHandlerOptions {
  /**
   * Requests one client address may have open at once (a stream counts until it ends); past
   * it: 429. Bounds what one client holds in memory. Default: 32.
   */
  maxRequestsPerClient?: number;
  /**
   * Told of an error the handler threw that is answered 500, with the `errorId` the client got
   * instead of the error's message; default: `console.error` of both.
   */
  onError?: HttpErrorListener;
}

/**
 * A `node:http` request listener over a Web handler (`(request) => Response`): each request
 * becomes a `Request` (`toWebRequest`), the handler's `Response` is written back
 * (`writeWebResponse`). A thrown error is answered by `errorResponse`: a refusal or an error meant
 * for the client with its status, anything else a 500 `{ error: 'InternalError', errorId }`
 * with no detail (the error goes to `onError` with the same id).
 *
 * @example
 * const guard = new RequestGuard();
 * const server = createServer(createNodeHandler(guard.handle({ name: 'ping', kind: 'read' }, () => Response.json('pong'))));
 * await listenTrusted(server, { guard, port: 3000 });
 */
export function createNodeHandler(
  handler: (request: Request) => Response | Promise<Response>,
  options: NodeHandlerOptions = {},
): (incoming: IncomingMessage, outgoing: ServerResponse) => void {
  const slots = new ClientSlots(options.maxRequestsPerClient ?? 32);
  const onError = options.onError ?? logHttpError;
  return (incoming, outgoing) => {
    const client = incoming.socket.remoteAddress ?? '';
    if (!slots.take(client)) {
      const refused = new HttpRefusedError({
        reason: 'too-many',
        message: `This client has ${slots.limit} requests open; close some first.`,
      });
      outgoing.setHeader('connection', 'close');
      void writeWebResponse(refusalResponse(refused), outgoing);
      return;
    }
    outgoing.once('close', () => slots.give(client));
    void answer(handler, incoming, outgoing, onError);
  };
}

async function answer(
  handler: (request: Request) => Response | Promise<Response>,
  incoming: IncomingMessage,
  outgoing: ServerResponse,
  onError: HttpErrorListener,
) {
  let response: Response;
  try {
    response = await handler(toWebRequest(incoming));
  } catch (error) {
    response = errorResponse(error, { onError });
    // Unread request bytes are discarded; the connection closes after the answer.
    outgoing.setHeader('connection', 'close');
  }
  if (outgoing.headersSent) return void outgoing.end();
  await writeWebResponse(response, outgoing);
}

/** Counts open requests per client address, up to `limit` each. */
export class ClientSlots {
  readonly limit: number;
  readonly #open = new Map<string, number>();

  constructor(limit: number) {
    this.limit = limit;
  }

  /** Takes a slot for `client`; false when it has `limit` open. */
  take(client: string): boolean {
    const open = this.#open.get(client) ?? 0;
    if (open >= this.limit) return false;
    this.#open.set(client, open + 1);
    return true;
  }

  /** Gives back one slot of `client`'s (entries of idle clients are dropped: memory stays bounded). */
  give(client: string): void {
    const open = (this.#open.get(client) ?? 1) - 1;
    if (open <= 0) this.#open.delete(client);
    else this.#open.set(client, open);
  }

  /** Open requests of `client`. */
  openOf(client: string): number {
    return this.#open.get(client) ?? 0;
  }
}
