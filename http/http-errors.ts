import {
  isTurnlogErrorNamed,
  TurnlogError,
  type TurnlogErrorOptions,
} from '../events/turnlog-error.ts';
import { jsonResponse, statusOfTurnlogError } from './json-answers.ts';

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

/**
 * An answer a route gives on purpose, with its own status and name (`NotFound`, a 409 a page
 * shows): answered as JSON `{ error: name, message }`, so the message is for the client.
 *
 * @example
 * throw new HttpAnswerError({ status: 404, name: 'NotFound', message: `No route for ${pathname}.` });
 */
export class HttpAnswerError extends Error {
  readonly status: number;

  constructor(options: { status: number; name: string; message: string }) {
    super(options.message);
    this.name = options.name;
    this.status = options.status;
  }
}

/**
 * Told of an error answered 500, with the `errorId` the client got: log both, so an operator
 * can find the error a client reports.
 */
export type HttpErrorListener = (error: unknown, context: { errorId: string }) => void;

/** The default `HttpErrorListener`: `console.error` with the id. */
export function logHttpError(error: unknown, { errorId }: { errorId: string }): void {
  console.error(`turnlog: internal error ${errorId}:`, error);
}

/**
 * The one mapping of a thrown error to an HTTP answer, for every surface turnlog ships:
 * a refusal is `refusalResponse(error)`, an `HttpAnswerError` its status, name and message, a
 * turnlog error meant for the client (`SessionBusyError` 409, `NoActiveRunError` 404,
 * `InvalidArgumentError` 400, …) its status, name and message. Anything else is a 500
 * `{ error: 'InternalError', message: 'internal error', errorId }` without the error's message
 * (a stack, a path or SQL would reach any client); `onError` gets the error with that id.
 *
 * @example
 * try { return await route(request); } catch (error) { return errorResponse(error, { onError }); }
 */
export function errorResponse(
  error: unknown,
  options: { onError?: HttpErrorListener | undefined } = {},
): Response {
  if (HttpRefusedError.isInstance(error)) return refusalResponse(error);
  if (error instanceof HttpAnswerError) {
    return jsonResponse(error.status, { error: error.name, message: error.message });
  }
  const status = statusOfTurnlogError(error);
  if (status !== undefined && error instanceof Error) {
    return jsonResponse(status, { error: error.name, message: error.message });
  }
  // Web Crypto: the same in Node, Bun, Deno and edge runtimes.
  const errorId = globalThis.crypto.randomUUID();
  (options.onError ?? logHttpError)(error, { errorId });
  return jsonResponse(500, {
    error: 'InternalError',
    message: `internal error; the server logged it as ${errorId}`,
    errorId,
  });
}
