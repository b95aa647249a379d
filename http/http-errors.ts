import {
  isTurnlogErrorNamed,
  TurnlogError,
  type TurnlogErrorOptions,
} from '../events/turnlog-error.ts';

/** Why the trust layer refused a request; each maps to one HTTP status. */
export type HttpRefusalReason =
  /** 400: a body that is not JSON or not UTF-8, a bad percent-encoding, a malformed `Host`. */
  | 'bad-request'
  /** 401: a token is configured and the request did not carry it. */
  | 'unauthenticated'
  /** 403: `authorize` said no (by default: a client that is not on loopback). */
  | 'forbidden'
  /** 403: an `Origin` or `Sec-Fetch-Site` of another site. */
  | 'cross-origin'
  /** 403: a `Host` that is not served (DNS rebinding). */
  | 'host'
  /** 405: an action asked for with GET or HEAD. */
  | 'method'
  /** 413: a body over the limit. */
  | 'too-large'
  /** 415: an action whose body is not `application/json`. */
  | 'content-type'
  /** 429: too many requests of one client open at once. */
  | 'too-many';

const statusOfReason: Record<HttpRefusalReason, number> = {
  'bad-request': 400,
  unauthenticated: 401,
  forbidden: 403,
  'cross-origin': 403,
  host: 403,
  method: 405,
  'too-large': 413,
  'content-type': 415,
  'too-many': 429,
};

/**
 * A request the trust layer (`http/`) will not act on. `status` is the HTTP status to answer
 * with, `reason` says which check refused it; `refusalResponse(error)` makes the answer.
 */
export class HttpRefusedError extends TurnlogError {
  static isInstance = isTurnlogErrorNamed<HttpRefusedError>('HttpRefusedError');
  readonly reason: HttpRefusalReason;
  readonly status: number;

  constructor(options: TurnlogErrorOptions & { reason: HttpRefusalReason }) {
    super(options);
    this.name = 'HttpRefusedError';
    this.reason = options.reason;
    this.status = statusOfReason[options.reason];
  }
}

/**
 * `listenTrusted()` asked to bind a non-loopback address with a guard that authenticates no
 * one: anyone on the network could act. Configure `token` (or `authorize`), or bind loopback.
 */
export class InsecureBindError extends TurnlogError {
  static isInstance = isTurnlogErrorNamed<InsecureBindError>('InsecureBindError');
  readonly host: string;

  constructor(options: TurnlogErrorOptions & { host: string }) {
    super(options);
    this.name = 'InsecureBindError';
    this.host = options.host;
  }
}

/**
 * The JSON answer to a refused request: `{ error: 'HttpRefusedError', reason, message }` with
 * the refusal's status (and `www-authenticate: Bearer` for a missing token).
 */
export function refusalResponse(error: HttpRefusedError): Response {
  const headers: Record<string, string> = { 'content-type': 'application/json; charset=utf-8' };
  if (error.reason === 'unauthenticated') headers['www-authenticate'] = 'Bearer';
  if (error.reason === 'method') headers.allow = 'POST';
  const body = { error: error.name, reason: error.reason, message: error.message };
  return new Response(JSON.stringify(body), { status: error.status, headers });
}
