import { clientAddress as recordedClientAddress } from './client-address.ts';
import {
  hostNameListed,
  hostNameOf,
  isIpLiteral,
  isLoopbackAddress,
  isLoopbackHostName,
} from './host-names.ts';
import { HttpRefusedError, refusalResponse } from './http-errors.ts';
import { defaultMaxBodyBytes, readJsonBody } from './request-body.ts';

/**
 * What a request asks for, as `authorize` sees it. `kind` decides the checks:
 * - `page`: a static page or asset (no data): `Host` only;
 * - `read`: data, no effect: `Host`, `Origin` when sent, the token, `authorize`;
 * - `act`: anything that changes something (starts a run, decides, stops): all of `read`, plus
 *   `Origin` or `Sec-Fetch-Site` must be this origin or an allowed one, the method must not be
 *   GET or HEAD, and the body must be `application/json`.
 */
export interface RequestAction {
  /** The route's name for it (`send`, `decide`, `chat.post`, …), for `authorize` and logs. */
  name: string;
  kind: 'page' | 'read' | 'act';
  /** The session it concerns, when it concerns one. */
  sessionId?: string;
}

/** Decides whether a trusted request may do `action`; sync or async. */
export type Authorize = (request: Request, action: RequestAction) => boolean | Promise<boolean>;

/** Options of `RequestGuard`. Every one has a safe default. */
export interface RequestGuardOptions {
  /**
   * Origins, besides the request's own, whose pages may act (`https://app.example.com`).
   * Default: none.
   */
  allowedOrigins?: readonly string[];
  /**
   * Host names served besides loopback names (`localhost`, `*.localhost`, 127.0.0.0/8, `::1`)
   * and IP literals; `.example.com` allows example.com and every name under it. Default: none.
   */
  allowedHosts?: readonly string[];
  /**
   * A shared secret: when set, every read and action must carry
   * `Authorization: Bearer <token>` (401 otherwise), and `authorize` then decides on top.
   */
  token?: string;
  /**
   * Decides each read and action that passed the other checks. Default: with a `token`, allow;
   * without one, allow only clients on loopback (`clientAddress`).
   */
  authorize?: Authorize;
  /** The client's address; default: what the Node adapter recorded (`clientAddress()`). */
  clientAddress?: (request: Request) => string | undefined;
  /** The largest body `readJson`/`act` read, in bytes. Default: 1 MiB. */
  maxBodyBytes?: number;
}

/**
 * The trust layer's checks for one HTTP surface, on Web-standard `Request`s (Node through
 * `toWebRequest`, Next.js route handlers, Hono). A refused request throws `HttpRefusedError`;
 * `handle()` turns that into its JSON answer.
 *
 * @example
 * const guard = new RequestGuard({ allowedOrigins: ['http://localhost:5173'] });
 * export async function POST(request: Request) {
 *   const body = await guard.act(request, { name: 'send', kind: 'act' });
 *   ...
 * }
 */
export class RequestGuard {
  readonly maxBodyBytes: number;
  readonly #allowedOrigins: ReadonlySet<string>;
  readonly #allowedHosts: readonly string[];
  readonly #token: string | undefined;
  readonly #authorize: Authorize | undefined;
  readonly #clientAddress: (request: Request) => string | undefined;

  constructor(options: RequestGuardOptions = {}) {
    this.#allowedOrigins = new Set((options.allowedOrigins ?? []).map(normalizedOrigin));
    this.#allowedHosts = options.allowedHosts ?? [];
    this.#token = options.token === '' ? undefined : options.token;
    this.#authorize = options.authorize;
    this.#clientAddress = options.clientAddress ?? recordedClientAddress;
    this.maxBodyBytes = options.maxBodyBytes ?? defaultMaxBodyBytes;
  }

  /** True when the guard authenticates clients (a token or an `authorize` of the caller's). */
  get authenticates(): boolean {
    return this.#token !== undefined || this.#authorize !== undefined;
  }

  /** Runs every check `action.kind` asks for; throws `HttpRefusedError` on the first that fails. */
  async check(request: Request, action: RequestAction): Promise<void> {
    this.checkHost(request);
    if (action.kind === 'page') return;
    this.checkOrigin(request, action);
    if (action.kind === 'act') checkActionRequest(request);
    await this.checkAuthorized(request, action);
  }

  /** `check`, then the body read whole as one JSON object (`{}` for an empty `optional` body). */
  async act(
    request: Request,
    action: RequestAction,
    { optional = false }: { optional?: boolean } = {},
  ): Promise<Record<string, unknown>> {
    await this.check(request, action);
    return this.readJson(request, { optional });
  }

  /** The body as one JSON object, at most `maxBodyBytes`, decoded once (see `readJsonBody`). */
  readJson(request: Request, { optional = false }: { optional?: boolean } = {}) {
    return readJsonBody(request, { limit: this.maxBodyBytes, optional });
  }

  /**
   * A route handler that runs `check` first: a refusal is answered as JSON with its status;
   * anything else `handler` throws propagates.
   *
   * @example
   * export const GET = guard.handle({ name: 'facts', kind: 'read' }, (request) => …);
   */
  handle(
    action: RequestAction | ((request: Request) => RequestAction),
    handler: (request: Request) => Response | Promise<Response>,
  ): (request: Request) => Promise<Response> {
    return async (request) => {
      try {
        await this.check(request, typeof action === 'function' ? action(request) : action);
      } catch (error) {
        if (HttpRefusedError.isInstance(error)) return refusalResponse(error);
        throw error;
      }
      return handler(request);
    };
  }

  /** DNS rebinding: the `Host` (or the URL's host) must be loopback, an IP literal or allowed. */
  checkHost(request: Request): void {
    const header = request.headers.get('host') ?? new URL(request.url).host;
    const name = hostNameOf(header);
    if (name === undefined) {
      throw new HttpRefusedError({
        reason: 'bad-request',
        message: `The Host header "${header}" is not a host name.`,
      });
    }
    if (isLoopbackHostName(name) || isIpLiteral(name)) return;
    if (hostNameListed(name, this.#allowedHosts)) return;
    throw new HttpRefusedError({
      reason: 'host',
      message: `The host "${name}" is not served here (a DNS rebinding guard); add it to allowedHosts if it is yours.`,
    });
  }

  /**
   * Cross-site requests: a sent `Origin` must be the request's own or an allowed one. For an
   * action without `Origin`, `Sec-Fetch-Site` must be `same-origin` or `none` when sent (a
   * browser sends one or the other; a client that sends neither is not a browser).
   */
  checkOrigin(request: Request, action: RequestAction): void {
    const origin = request.headers.get('origin');
    if (origin !== null) {
      if (origin !== 'null' && this.originAllowed(request, origin)) return;
      throw new HttpRefusedError({
        reason: 'cross-origin',
        message: `Requests from ${origin} may not ${action.name} here; add the origin to allowedOrigins if it is yours.`,
      });
    }
    const site = request.headers.get('sec-fetch-site');
    if (action.kind !== 'act' || site === null || site === 'same-origin' || site === 'none') return;
    throw new HttpRefusedError({
      reason: 'cross-origin',
      message: `A ${site} request may not ${action.name} here.`,
    });
  }

  /** The token (when configured), then `authorize` (default: loopback clients only). */
  async checkAuthorized(request: Request, action: RequestAction): Promise<void> {
    if (this.#token !== undefined && !bearerMatches(request, this.#token)) {
      throw new HttpRefusedError({
        reason: 'unauthenticated',
        message: 'This server needs a token: send Authorization: Bearer <token>.',
      });
    }
    if (this.#authorize !== undefined) {
      if (await this.#authorize(request, action)) return;
      throw new HttpRefusedError({
        reason: 'forbidden',
        message: `Not authorized to ${action.name}.`,
      });
    }
    if (this.#token !== undefined) return;
    const address = this.#clientAddress(request);
    if (isLoopbackAddress(address)) return;
    throw new HttpRefusedError({
      reason: 'forbidden',
      message: `Only clients on this machine may ${action.name} (this one is ${address ?? 'of unknown address'}); configure a token or authorize to serve others.`,
    });
  }

  private originAllowed(request: Request, origin: string): boolean {
    const normalized = normalizedOrigin(origin);
    return normalized === new URL(request.url).origin || this.#allowedOrigins.has(normalized);
  }
}

/** An action is never a GET or HEAD, and its body is `application/json` (415 otherwise). */
function checkActionRequest(request: Request): void {
  if (request.method === 'GET' || request.method === 'HEAD') {
    throw new HttpRefusedError({
      reason: 'method',
      message: `An action is never a ${request.method}; use POST.`,
    });
  }
  const contentType = request.headers.get('content-type') ?? '';
  const [mediaType = '', ...parameters] = contentType.split(';').map((part) => part.trim());
  const charset = parameters
    .map((parameter) => /^charset=(.*)$/i.exec(parameter)?.[1]?.replace(/"/g, '').toLowerCase())
    .find((value) => value !== undefined);
  // A form (text/plain, urlencoded, multipart) or a no-cors fetch can send only these; JSON
  // needs a CORS preflight, which a page of another origin does not pass.
  if (mediaType.toLowerCase() === 'application/json' && (charset ?? 'utf-8') === 'utf-8') return;
  throw new HttpRefusedError({
    reason: 'content-type',
    message: `An action's body must be application/json (UTF-8), not "${contentType || 'none'}".`,
  });
}

function normalizedOrigin(origin: string): string {
  try {
    return new URL(origin).origin;
  } catch {
    return origin;
  }
}

/** Compares the bearer token in constant time (no early exit on the first differing char). */
function bearerMatches(request: Request, token: string): boolean {
  const header = request.headers.get('authorization') ?? '';
  const match = /^Bearer\s+(.+)$/i.exec(header);
  const given = match?.[1]?.trim() ?? '';
  let difference = given.length ^ token.length;
  for (let index = 0; index < token.length; index += 1) {
    difference |= token.charCodeAt(index) ^ given.charCodeAt(index % Math.max(given.length, 1));
  }
  return difference === 0;
}
