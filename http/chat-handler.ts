import { uiMessageStreamResponse } from '../adapters/ui/ui-chat-messages.ts';
import { toUIMessageStream, toUIMessages } from '../adapters/ui/ui-message-stream.ts';
import type { Fact, PermissionDecision } from '../events/facts.ts';
import type { TurnHandle } from '../machines/effects/turn-channel.ts';
import { SessionBusyError } from '../runtime-errors.ts';

import { badRequest, type ChatPost, filesOf, readChatPost, textOf } from './chat-request.ts';
import { errorResponse, HttpAnswerError, type HttpErrorListener } from './http-errors.ts';
import { jsonResponse as json, methodNotAllowed as notAllowed } from './json-answers.ts';
import { decodePathSegment } from './request-body.ts';
import { type RequestAction, RequestGuard, type RequestGuardOptions } from './request-guard.ts';

/** What `chatHandler` needs of a runtime (`createRuntime`'s `Runtime` has it all). */
export interface ChatRuntime {
  send(input: {
    sessionId: string;
    text: string;
    files?: { mediaType: string; data: string; filename?: string }[];
    regenerates?: string;
  }): Promise<TurnHandle>;
  decide(input: {
    sessionId: string;
    callId: string;
    decision: PermissionDecision;
    reason?: string;
    inputHash?: string;
  }): Promise<void>;
  stop(input: { sessionId: string; reason?: string }): Promise<void>;
  facts(sessionId: string): Promise<Fact[]>;
  follow(sessionId: string, options?: { signal?: AbortSignal }): Promise<TurnHandle | undefined>;
}

/**
 * Options of `chatHandler`: the trust layer's (`RequestGuardOptions`: `authorize`, `token`,
 * `allowedOrigins`, `allowedHosts`, `clientAddress`, `maxBodyBytes`, default 8 MiB here since
 * attached files come as data URLs), or a `guard` shared with other routes, and the chat's own.
 */
export interface ChatHandlerOptions<TSendExtras = Record<string, never>>
  extends RequestGuardOptions {
  /** The path the routes are under, as `DefaultChatTransport`'s `api`. Default `/api/chat`. */
  basePath?: string;
  /** A guard to use instead of one made from these options. */
  guard?: RequestGuard;
  /**
   * The session of a chat id. Default: the chat id itself. Map it to keep users apart
   * (`(chatId, request) => \`${userOf(request)}:${chatId}\``): a chat id then reaches only its
   * user's sessions.
   */
  sessionId?: (chatId: string, request: Request) => string | Promise<string>;
  /** More of `runtime.send()`'s argument for a new run (besides the session and the message). */
  send?: (request: Request) => TSendExtras | Promise<TSendExtras>;
  /**
   * Told of each error answered 500 (a bug, or the store failing), with the `errorId` the
   * client got instead of the error's message. Default: `console.error` of both.
   */
  onError?: HttpErrorListener;
}

type SendExtrasOf<TRuntime extends ChatRuntime> = Omit<
  Parameters<TRuntime['send']>[0],
  'sessionId' | 'text' | 'files' | 'regenerates'
>;

/**
 * The chat routes `useChat` (`@ai-sdk/react`, or any `Chat`) talks to with the AI SDK's
 * `DefaultChatTransport`, as one Fetch handler: a Web `Request` in, a `Response` out. It keeps
 * no state of its own (everything is in the runtime and the log), so any worker serves any
 * request. Every request passes the trust layer first (`RequestGuard`: Host, Origin, JSON-only
 * actions, `authorize`; by default only clients on loopback, as `toWebRequest` records them).
 * Under `basePath` (default `/api/chat`); the chat id is the session id by default:
 *
 * ```text
 * POST /api/chat                    useChat's body: a user message starts a run; approvals
 *                                   answered record decisions and continue the run's message
 *                                   → UI message stream (409 JSON while the run is unfinished)
 * GET  /api/chat/:id/stream         resumeStream(): the unfinished run from the log, then live
 *                                   (204: none)
 * GET  /api/chat/:id/messages       the session as UI messages, from the log (a page load)
 * POST /api/chat/:id/stop           stops the unfinished run → 200 { stopped } (useChat's stop()
 *                                   only closes its stream: call this too)
 * GET  /api/chat/:id/moved?after=N  → 200 { seq } once the unfinished run records a fact after
 *                                   N (a decision made elsewhere), 204 when it has none
 * ```
 *
 * Errors are JSON `{ error, message }` (what `useChat`'s `onError` shows): 400 a body that is
 * not useChat's, 401/403/415 refused by the trust layer, 404 no such route or run, 409 busy or
 * already decided, 413 over `maxBodyBytes`, 503 the runtime closed (`errorResponse`). Any other
 * error is a 500 `{ error: 'InternalError', message, errorId }` without its message; `onError`
 * gets the error with the same `errorId`.
 *
 * @example
 * // app/api/chat/[[...path]]/route.ts (Next.js): your own authentication decides
 * const handler = chatHandler(runtime, { authorize: async (request) => (await auth(request)) !== null });
 * export const GET = handler;
 * export const POST = handler;
 */
export function chatHandler<TRuntime extends ChatRuntime>(
  runtime: TRuntime,
  options: ChatHandlerOptions<SendExtrasOf<TRuntime>> = {},
): (request: Request) => Promise<Response> {
  const routes = new ChatRoutes(runtime, options as ChatHandlerOptions<object>);
  return (request) => routes.handle(request);
}

/** A route of the handler: what it does, for which chat. */
type Route =
  | { action: 'post' }
  | { action: 'resume' | 'messages' | 'moved' | 'stop'; chatId: string };

/** The routes of `chatHandler`, over one runtime. */
class ChatRoutes {
  readonly #runtime: ChatRuntime;
  readonly #options: ChatHandlerOptions<object>;
  readonly #guard: RequestGuard;
  readonly #base: string;

  constructor(runtime: ChatRuntime, options: ChatHandlerOptions<object>) {
    this.#runtime = runtime;
    this.#options = options;
    this.#guard =
      options.guard ??
      new RequestGuard({ ...options, maxBodyBytes: options.maxBodyBytes ?? 8 * 1024 * 1024 });
    this.#base = (options.basePath ?? '/api/chat').replace(/\/+$/, '');
  }

  async handle(request: Request): Promise<Response> {
    try {
      const route = this.#route(request);
      if (route instanceof Response) return route;
      if (route.action === 'post') return await this.#post(request);
      return await this.#chatRoute(request, route);
    } catch (error) {
      return this.#errorResponse(error);
    }
  }

  /** The route a request asks for, or the answer when it names none. */
  #route(request: Request): Route | Response {
    const { pathname } = new URL(request.url);
    if (pathname === this.#base) {
      return request.method === 'POST' ? { action: 'post' } : notAllowed('POST');
    }
    const rest = pathname.startsWith(`${this.#base}/`) ? pathname.slice(this.#base.length) : '';
    const match = /^\/([^/]+)\/(stream|messages|moved|stop)$/.exec(rest);
    if (match === null) {
      return json(404, { error: 'NotFound', message: `No chat route at ${pathname}.` });
    }
    const action = match[2] === 'stream' ? 'resume' : (match[2] as 'messages' | 'moved' | 'stop');
    const method = action === 'stop' ? 'POST' : 'GET';
    if (request.method !== method) return notAllowed(method);
    return { action, chatId: decodePathSegment(match[1] as string) };
  }

  async #sessionOf(chatId: string, request: Request): Promise<string> {
    return (await this.#options.sessionId?.(chatId, request)) ?? chatId;
  }

  /** `POST /api/chat`: the trust layer's checks, then what useChat's body asks for. */
  async #post(request: Request): Promise<Response> {
    const body = await this.#guard.act(request, { name: 'chat.post', kind: 'act' });
    const post = await readChatPost(body);
    const sessionId = await this.#sessionOf(post.chatId, request);
    switch (post.kind) {
      case 'message':
        return this.#send(request, sessionId, post);
      case 'answers':
        return this.#answer(request, sessionId, post);
      case 'regenerate':
        return this.#regenerate(request, sessionId, post);
      default: {
        const unknown: never = post;
        throw new Error(`chatHandler: unknown post ${JSON.stringify(unknown)}`);
      }
    }
  }

  /** A user message (its text and attached files): a new run, streamed from `run.started`. */
  async #send(
    request: Request,
    sessionId: string,
    post: Extract<ChatPost, { kind: 'message' }>,
  ): Promise<Response> {
    const message = { text: textOf(post.message), files: filesOf(post.message) };
    return this.#start(request, { sessionId, ...message });
  }

  /**
   * `regenerate()`: a new run for the last run's input (as the log has it), superseding its
   * answer (`run.started.regenerates`): after a reload the page shows the question once and the
   * newer answer. Only the last answer, once its run ended.
   */
  async #regenerate(
    request: Request,
    sessionId: string,
    post: Extract<ChatPost, { kind: 'regenerate' }>,
  ): Promise<Response> {
    const facts = await this.#runtime.facts(sessionId);
    const last = facts.findLast((fact) => fact.type === 'run.started');
    if (
      last?.type !== 'run.started' ||
      (post.messageId !== undefined && post.messageId !== last.runId)
    ) {
      throw new HttpAnswerError({
        status: 409,
        name: 'RegenerateRefused',
        message: 'Only the last answer can be regenerated; send a new message instead.',
      });
    }
    const { text, files } = last.input;
    return this.#start(request, {
      sessionId,
      text,
      ...(files === undefined ? {} : { files }),
      regenerates: last.runId,
    });
  }

  /** Starts a run (busy: a 409 the page shows) and streams it from `run.started`. */
  async #start(request: Request, message: Parameters<ChatRuntime['send']>[0]): Promise<Response> {
    const extras = (await this.#options.send?.(request)) ?? {};
    let turn: TurnHandle;
    try {
      turn = await this.#runtime.send({ ...extras, ...message });
    } catch (error) {
      if (!SessionBusyError.isInstance(error)) throw error;
      // Refused, never lost silently: the page shows why, and the message is not in the log.
      throw new HttpAnswerError({
        status: 409,
        name: 'SessionBusyError',
        message:
          'This message was not sent: the agent is still on the last one, or waits for your ' +
          'decision. Answer it, or stop the run, then send the message again.',
      });
    }
    return streamResponse(toUIMessageStream(turn));
  }

  /** Approvals answered: each decision recorded (bound to its input hash), then the rest of the run. */
  async #answer(
    request: Request,
    sessionId: string,
    post: Extract<ChatPost, { kind: 'answers' }>,
  ): Promise<Response> {
    // I5: each decision is bound to the input hash its approval was requested for.
    for (const answer of post.answers) await this.#runtime.decide({ sessionId, ...answer });
    const following = new Following(request);
    const run = await this.#runOf(sessionId, post.runId, following);
    const stream = toUIMessageStream(
      run,
      post.afterSeq === undefined ? {} : { afterSeq: post.afterSeq },
    );
    return streamResponse(following.until(stream));
  }

  /** The run's events: followed live while it is unfinished, else its facts from the log. */
  async #runOf(sessionId: string, runId: string | undefined, following: Following) {
    const turn = await this.#runtime.follow(sessionId, { signal: following.signal });
    if (turn !== undefined && (runId === undefined || turn.runId === runId)) return turn;
    following.release();
    const facts = await this.#runtime.facts(sessionId);
    const run = runId ?? facts.at(-1)?.runId ?? '';
    return { sessionId, runId: run, events: facts.filter((fact) => fact.runId === run) };
  }

  /** The routes of one chat: the trust layer's checks for a read or an action, then the route. */
  async #chatRoute(request: Request, route: Extract<Route, { chatId: string }>): Promise<Response> {
    const sessionId = await this.#sessionOf(route.chatId, request);
    const action: RequestAction = {
      name: `chat.${route.action}`,
      kind: route.action === 'stop' ? 'act' : 'read',
      sessionId,
    };
    switch (route.action) {
      case 'resume': {
        await this.#guard.check(request, action);
        const following = new Following(request);
        const turn = await this.#runtime.follow(sessionId, { signal: following.signal });
        if (turn === undefined) return new Response(null, { status: 204 });
        return streamResponse(following.until(toUIMessageStream(turn)));
      }
      case 'messages':
        await this.#guard.check(request, action);
        return json(200, toUIMessages(await this.#runtime.facts(sessionId)));
      case 'stop':
        await this.#guard.act(request, action, { optional: true });
        await this.#runtime.stop({ sessionId, reason: 'stopped from the chat' });
        return json(200, { stopped: true });
      case 'moved':
        await this.#guard.check(request, action);
        return this.#moved(request, sessionId);
      default: {
        const unknown: never = route.action;
        throw new Error(`chatHandler: no route ${String(unknown)}`);
      }
    }
  }

  /**
   * `GET /:id/moved?after=N`: a long poll, answered `{ seq }` once the unfinished run records a
   * fact after `N` (a decision made on another page, a stop), 204 at once when it has none. A
   * page whose run waits for a person holds one open and, when it answers, resumes the stream.
   */
  async #moved(request: Request, sessionId: string): Promise<Response> {
    const after = Number(new URL(request.url).searchParams.get('after') ?? Number.NaN);
    if (!Number.isSafeInteger(after) || after < 0) {
      throw badRequest('"after" must be the seq the page has seen (?after=N).');
    }
    const following = new Following(request);
    const turn = await this.#runtime.follow(sessionId, { signal: following.signal });
    if (turn === undefined) return new Response(null, { status: 204 });
    const events = turn.events[Symbol.asyncIterator]();
    const release = () => {
      following.release();
      void Promise.resolve(events.return?.()).catch(() => {});
    };
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        for (let next = await events.next(); !next.done; next = await events.next()) {
          if ('seq' in next.value && next.value.seq > after) {
            controller.enqueue(new TextEncoder().encode(JSON.stringify({ seq: next.value.seq })));
            break;
          }
        }
        release();
        controller.close();
      },
      // The page left (or answered itself): the run goes on; only this wait ends.
      cancel: release,
    });
    return new Response(body, { headers: { 'content-type': 'application/json' } });
  }

  #errorResponse(error: unknown): Response {
    return errorResponse(error, { onError: this.#options.onError });
  }
}

/**
 * One request's handle of a run (`runtime.follow`), let go when the response it feeds ends, is
 * cancelled (the client left) or the request aborts: a run waiting long for a person keeps
 * nothing of the pages that reloaded or long-polled it.
 */
class Following {
  readonly #controller = new AbortController();

  constructor(request: Request) {
    if (request.signal.aborted) this.release();
    else request.signal.addEventListener('abort', () => this.release(), { once: true });
  }

  /** What `follow()` is given: aborted once the response is done with the handle. */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** Lets the handle go (again: nothing). */
  release(): void {
    this.#controller.abort(new Error('chatHandler: the response following this run ended'));
  }

  /** `stream`, which lets the handle go once it ends, fails or is cancelled. */
  until<T>(stream: ReadableStream<T>): ReadableStream<T> {
    const reader = stream.getReader();
    return new ReadableStream<T>({
      pull: async (controller) => {
        try {
          const next = await reader.read();
          if (!next.done) return controller.enqueue(next.value);
          this.release();
          controller.close();
        } catch (error) {
          this.release();
          controller.error(error);
        }
      },
      cancel: async (reason) => {
        this.release();
        await reader.cancel(reason);
      },
    });
  }
}

function streamResponse(stream: ReturnType<typeof toUIMessageStream>): Response {
  return uiMessageStreamResponse(stream);
}
