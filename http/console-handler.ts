import type { Fact, PermissionDecision } from '../events/facts.ts';
import {
  durationMs,
  matchesFilter,
  quietestFirst,
  type SessionFilter,
  type SessionOverview,
  type SessionStatus,
  sessionOverview,
  sessionStatuses,
} from '../operations/session-overview.ts';
import { errorResponse, HttpAnswerError, type HttpErrorListener } from './http-errors.ts';
import { jsonResponse as json, methodNotAllowed as notAllowed } from './json-answers.ts';
import { decodePathSegment } from './request-body.ts';
import { type RequestAction, RequestGuard, type RequestGuardOptions } from './request-guard.ts';

/** What the console needs of a runtime (`createRuntime`'s `Runtime` has it all). */
export interface ConsoleRuntime {
  decide(input: {
    sessionId: string;
    callId: string;
    decision: PermissionDecision;
    reason?: string;
  }): Promise<void>;
  stop(input: { sessionId: string; reason?: string }): Promise<void>;
}

/** What the console reads of the store (every `EventStore` has it). */
export interface ConsoleStore {
  sessions(): Promise<string[]>;
  read(sessionId: string): Promise<Fact[]>;
}

/**
 * Options of `consoleHandler`: the trust layer's (`RequestGuardOptions`: `authorize`, `token`,
 * `allowedOrigins`, `allowedHosts`, `clientAddress`), or a `guard` shared with other routes.
 */
export interface ConsoleHandlerOptions extends RequestGuardOptions {
  /** The runtime's store, which the list reads. */
  store: ConsoleStore;
  /** The path the routes are under. Default `/api/console`. */
  basePath?: string;
  /** A guard to use instead of one made from these options. */
  guard?: RequestGuard;
  /** The clock "older than" is measured on. Default `Date.now`. */
  now?: () => number;
  /**
   * Told of each error answered 500 (a bug, or the store failing), with the `errorId` the
   * client got instead of the error's message. Default: `console.error` of both.
   */
  onError?: HttpErrorListener;
}

/** One session in the console's list: its overview, and what a search matched in it. */
export interface ConsoleSession extends SessionOverview {
  /** What `q` matched: the session id (a part of it), a run id or a call id; `undefined` without `q`. */
  matched: 'session' | 'run' | 'call' | undefined;
}

/** The answer of `GET …/sessions`. */
export interface ConsoleSessionList {
  sessions: ConsoleSession[];
  /** The sessions that passed every filter (`sessions` holds at most `limit` of them). */
  total: number;
  /** Per status, the sessions that passed every filter but `status` (what each status filter would show). */
  counts: Record<SessionStatus, number>;
}

/** The decisions an operator may give from the console (`abort` is a stop: use stop). */
const consoleDecisions: readonly PermissionDecision[] = ['allow', 'deny', 'report-unknown'];

/** The filters of a list request, parsed; `q` is the search. */
interface ListQuery {
  filter: SessionFilter;
  q: string | undefined;
  limit: number;
}

/**
 * The operator console's JSON API, as one Fetch handler: the sessions list with the filters of
 * `turnlog sessions` and counts per status, search by session, run or call id, and the actions
 * (approve, deny, report unknown, stop) through the runtime's own `decide`/`stop`, so a decision
 * is checked exactly as the runtime checks it. Every request passes the trust layer first
 * (`RequestGuard`): reads need Host, a same-origin `Origin` when sent, and `authorize`; actions
 * also a same-origin page and a JSON body. By default `authorize` refuses every client but
 * loopback unless a `token` is configured. Under `basePath` (default `/api/console`):
 *
 * ```text
 * GET  /api/console/sessions?status=awaiting,failed&worker=W&olderThan=2h&q=ID&limit=N
 *        → 200 { sessions, total, counts }   (quietest first; counts per status)
 * POST /api/console/sessions/:id/decide  { callId, decision: allow|deny|report-unknown, reason? }
 *        → 200 { decided, decision }
 * POST /api/console/sessions/:id/stop    { reason? }   → 200 { stopped }
 * ```
 *
 * Live updates are a poll of the list: the handler keeps nothing per client between requests.
 * Errors are JSON `{ error, message }`: 400 a bad filter or body, 401/403/405/415 refused by the
 * trust layer, 404 no such run or decision, 409 busy, damaged or already decided, 503 closed.
 *
 * @example
 * const console = consoleHandler(runtime, { store, token: process.env.TURNLOG_TOKEN });
 * createServer(createNodeHandler(console)).listen(3001, '127.0.0.1');
 */
export function consoleHandler(
  runtime: ConsoleRuntime,
  options: ConsoleHandlerOptions,
): (request: Request) => Promise<Response> {
  const routes = new ConsoleRoutes(runtime, options);
  return (request) => routes.handle(request);
}

/** The routes of `consoleHandler`, over one runtime and its store. */
class ConsoleRoutes {
  readonly #runtime: ConsoleRuntime;
  readonly #options: ConsoleHandlerOptions;
  readonly #guard: RequestGuard;
  readonly #base: string;

  constructor(runtime: ConsoleRuntime, options: ConsoleHandlerOptions) {
    this.#runtime = runtime;
    this.#options = options;
    this.#guard = options.guard ?? new RequestGuard(options);
    this.#base = (options.basePath ?? '/api/console').replace(/\/+$/, '');
  }

  async handle(request: Request): Promise<Response> {
    try {
      const url = new URL(request.url);
      if (url.pathname === `${this.#base}/sessions`) {
        if (request.method !== 'GET') return notAllowed('GET');
        await this.#guard.check(request, { name: 'console.sessions', kind: 'read' });
        return json(200, await this.#list(listQueryOf(url, this.#now())));
      }
      const rest = url.pathname.startsWith(`${this.#base}/`)
        ? url.pathname.slice(this.#base.length)
        : '';
      const match = /^\/sessions\/([^/]+)\/(decide|stop)$/.exec(rest);
      if (match === null) {
        return json(404, { error: 'NotFound', message: `No console route at ${url.pathname}.` });
      }
      if (request.method !== 'POST') return notAllowed('POST');
      const sessionId = decodePathSegment(match[1] as string);
      return match[2] === 'decide'
        ? await this.#decide(request, sessionId)
        : await this.#stop(request, sessionId);
    } catch (error) {
      return this.#errorResponse(error);
    }
  }

  #now(): number {
    return (this.#options.now ?? Date.now)();
  }

  /** Every session's overview (`sessionOverview`), searched, counted, filtered, quietest first. */
  async #list({ filter, q, limit }: ListQuery): Promise<ConsoleSessionList> {
    const { statuses, ...others } = filter;
    const counts = Object.fromEntries(sessionStatuses.map((status) => [status, 0])) as Record<
      SessionStatus,
      number
    >;
    const found: ConsoleSession[] = [];
    for (const sessionId of await this.#options.store.sessions()) {
      const facts = await this.#options.store.read(sessionId);
      const overview = sessionOverview(facts);
      if (overview === undefined || !matchesFilter(overview, others)) continue;
      const matched = q === undefined ? undefined : searchMatch(sessionId, facts, q);
      if (q !== undefined && matched === undefined) continue;
      counts[overview.status] += 1;
      if (statuses === undefined || statuses.includes(overview.status)) {
        found.push({ ...overview, matched });
      }
    }
    found.sort(quietestFirst);
    return { sessions: found.slice(0, limit), total: found.length, counts };
  }

  /** `POST …/sessions/:id/decide`: the runtime's `decide`, with its checks and errors. */
  async #decide(request: Request, sessionId: string): Promise<Response> {
    const action: RequestAction = { name: 'console.decide', kind: 'act', sessionId };
    const { callId, decision, reason } = await this.#guard.act(request, action);
    if (typeof callId !== 'string') throw badInput('The body needs "callId", a string');
    if (!consoleDecisions.includes(decision as PermissionDecision)) {
      throw badInput(`"decision" must be one of ${consoleDecisions.join(', ')}`);
    }
    if (reason !== undefined && typeof reason !== 'string') {
      throw badInput('"reason" must be a string');
    }
    await this.#runtime.decide({
      sessionId,
      callId,
      decision: decision as PermissionDecision,
      reason: reason ?? 'decided from the console',
    });
    return json(200, { decided: callId, decision });
  }

  /** `POST …/sessions/:id/stop`: the runtime's `stop`; the run ends `aborted`. */
  async #stop(request: Request, sessionId: string): Promise<Response> {
    const action: RequestAction = { name: 'console.stop', kind: 'act', sessionId };
    const { reason } = await this.#guard.act(request, action, { optional: true });
    if (reason !== undefined && typeof reason !== 'string') {
      throw badInput('"reason" must be a string');
    }
    await this.#runtime.stop({ sessionId, reason: reason ?? 'stopped from the console' });
    return json(200, { stopped: sessionId });
  }

  #errorResponse(error: unknown): Response {
    return errorResponse(error, { onError: this.#options.onError });
  }
}

/** A query string or body the console cannot use (a 400). */
function badInput(message: string): HttpAnswerError {
  return new HttpAnswerError({ status: 400, name: 'BadRequest', message: `${message}.` });
}

/** The list's filters from the query string, as `turnlog sessions` takes them. */
function listQueryOf(url: URL, now: number): ListQuery {
  const parameters = url.searchParams;
  const status = parameters.get('status');
  const worker = parameters.get('worker');
  const olderThan = parameters.get('olderThan');
  const q = parameters.get('q')?.trim();
  const limit = Number(parameters.get('limit') ?? 200);
  const statuses = status ? status.split(',').map((part) => part.trim()) : undefined;
  const unknown = statuses?.find((part) => !sessionStatuses.includes(part as SessionStatus));
  if (unknown !== undefined) {
    throw badInput(`"${unknown}" is not a status; use ${sessionStatuses.join(', ')}`);
  }
  const quiet = olderThan ? durationMs(olderThan) : undefined;
  if (olderThan && quiet === undefined) {
    throw badInput(`olderThan "${olderThan}" is not a duration; write 90s, 30m, 2h or 7d`);
  }
  if (!Number.isInteger(limit) || limit < 1) throw badInput('"limit" must be a whole number ≥ 1');
  return {
    filter: {
      ...(statuses === undefined ? {} : { statuses: statuses as SessionStatus[] }),
      ...(worker ? { worker } : {}),
      ...(quiet === undefined ? {} : { quietSince: now - quiet }),
    },
    q: q ? q : undefined,
    limit,
  };
}

/** What `q` names in a session: (a part of) its id, one of its runs, or one of its calls. */
function searchMatch(
  sessionId: string,
  facts: readonly Fact[],
  q: string,
): ConsoleSession['matched'] {
  if (sessionId.includes(q)) return 'session';
  if (facts.some((fact) => fact.runId === q)) return 'run';
  if (facts.some((fact) => 'callId' in fact && fact.callId === q)) return 'call';
  return undefined;
}
