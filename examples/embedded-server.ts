// turnlog embedded in a plain node:http server: the shape a Node app takes to put an agent
// behind HTTP. Runs are streamed as server-sent events; permission asks are answered through
// their own endpoint, from any client, even after a restart.
//
// Run: npx node examples/embedded-server.ts   (PORT, default 3000; PORT=0 picks a free one;
//   HOST, default 127.0.0.1; TURNLOG_TOKEN, required for a HOST that is not loopback)
//   POST /sessions/:id/messages   { text }                       → SSE: the run's facts and deltas
//   POST /sessions/:id/decisions  { callId, decision, reason? }  → 200 { decided }
//   POST /sessions/:id/stop       { reason? }                    → 200 { stopped }
//   GET  /sessions/:id/facts                                     → 200 [fact, …]
//   GET  /sessions/:id/pending                                   → 200 [decision, …]
// and the web example (examples/web, built by `npm run web`): the chat page at /, talking to
// /api/chat as useChat does (`chatHandler`; a page whose run waits for a person follows it
// through /api/chat/:id/moved), and the log viewer at /log
// (examples/web/server/log-routes.ts), whose sessions list and actions are the operator
// console's API under /api/console (`consoleHandler`).
// Every route goes through turnlog's trust layer (http/, architecture/http.md): it answers only a
// Host that is loopback or allowed (DNS rebinding), acts only for this origin's pages (Origin,
// Sec-Fetch-Site) with application/json bodies (a cross-site form or no-cors fetch is refused),
// and only for clients on this machine unless TURNLOG_TOKEN is set (then every client sends
// Authorization: Bearer <token>). It listens on 127.0.0.1 (HOST to change it; a non-loopback
// HOST needs TURNLOG_TOKEN). Refusals are JSON { error: 'HttpRefusedError', reason, message }.
// Errors are JSON { error, message }: 400 bad input, 404 no such run or decision, 409 busy, damaged or
// already decided; any other error is a 500 { error: 'InternalError', message, errorId } without
// its detail, which goes to the server's log beside the same errorId (errorResponse). Offline
// with a scripted model unless OPENAI_API_KEY or GOOGLE_GENERATIVE_AI_API_KEY is set; the log
// goes to .turnlog/embedded-server/ (under TURNLOG_DIR if set). Ctrl-C or SIGTERM shuts it down; unfinished runs resume on the next start.
import { createServer, type ServerResponse } from 'node:http';
import path from 'node:path';
import {
  chatHandler,
  consoleHandler,
  createNodeHandler,
  decodePathSegment,
  errorResponse,
  HttpAnswerError,
  type HttpErrorListener,
  listenTrusted,
  lowdbStore,
  type PermissionDecision,
  type RequestAction,
  RequestGuard,
  type Runtime,
} from '../index.ts';
import { createNotesRuntime } from './notes-agent.ts';
import { cutAtShutdown, eventStreamResponse, OpenStreams } from './server-streams.ts';
import { createLogRoutes } from './web/server/log-routes.ts';
import { staticFile, webDist } from './web/server/static-files.ts';

const decisions: readonly PermissionDecision[] = ['allow', 'deny', 'report-unknown', 'abort'];

/** Options of `startServer`. */
export interface ServerOptions {
  /** Default 3000; 0 picks a free one. */
  port?: number;
  /** Default 127.0.0.1; any other address needs `token` (`InsecureBindError`). */
  host?: string;
  /** Where the log goes. Default: .turnlog/embedded-server (under TURNLOG_DIR if set). */
  dir?: string;
  /** When set, every client must send `Authorization: Bearer <token>`. */
  token?: string;
  /** Origins besides the server's own whose pages may act (a dev server's). */
  allowedOrigins?: readonly string[];
  /** Host names besides loopback names and IP literals (the name a proxy forwards). */
  allowedHosts?: readonly string[];
  /** Told of each error answered 500, with the `errorId` the client got. Default: `console.error`. */
  onError?: HttpErrorListener;
  /** The built pages' folder. Default: examples/web/dist (`npm run web`), or TURNLOG_WEB_DIST. */
  webDist?: string;
}

/**
 * Starts the server: a note-keeping agent on a lowdb log in `dir`, unfinished runs recovered,
 * listening on `host:port` behind the trust layer. `close()` ends open event streams, stops
 * listening and closes the runtime (live runs stay unfinished in the log for the next start).
 *
 * @example
 * const server = await startServer({ port: 0, dir: '.turnlog/embedded-server' });
 * console.log(server.url); // http://127.0.0.1:54321
 * await server.close();
 */
export async function startServer(options: ServerOptions = {}) {
  const dir = options.dir ?? path.join(process.env.TURNLOG_DIR ?? '.turnlog', 'embedded-server');
  const guard = new RequestGuard({
    ...(options.token === undefined ? {} : { token: options.token }),
    ...(options.allowedOrigins === undefined ? {} : { allowedOrigins: options.allowedOrigins }),
    ...(options.allowedHosts === undefined ? {} : { allowedHosts: options.allowedHosts }),
    // A useChat request carries the whole conversation.
    maxBodyBytes: 4 * 1024 * 1024,
  });
  const store = lowdbStore({ dir });
  const runtime = await createNotesRuntime(store);
  const recovered = await runtime.recover();
  const server: Server = {
    runtime,
    guard,
    streams: new OpenStreams(),
    // The routes useChat talks to: runtime.follow() rebuilds any run's stream from the log.
    chat: chatHandler(runtime, { guard, onError: options.onError }),
    log: createLogRoutes({ runtime, store, recovered }),
    // The operator console: the sessions list and its actions, through runtime.decide()/stop().
    console: consoleHandler(runtime, { store, guard, onError: options.onError }),
    onError: options.onError,
    webDist: options.webDist ?? process.env.TURNLOG_WEB_DIST ?? webDist,
  };
  const handler = createNodeHandler((request) => answer(server, request), {
    onError: options.onError,
  });
  const responses = new Set<ServerResponse>();
  const http = createServer((incoming, outgoing) => {
    responses.add(outgoing);
    outgoing.once('close', () => responses.delete(outgoing));
    handler(incoming, outgoing);
  });
  const bound = await listenTrusted(http, {
    guard,
    port: options.port ?? 3000,
    host: options.host ?? '127.0.0.1',
  }).catch(async (error: unknown) => {
    await runtime.close();
    throw error;
  });
  let closing: Promise<void> | undefined;
  return {
    url: bound.url,
    port: bound.port,
    /** The node:http server (its connections, for a test). */
    http,
    runtime,
    /** The log (subscribe to a session to follow runs nobody streams). */
    store,
    /** Runs recovered at start (see `runtime.recover()`). */
    recovered,
    close(): Promise<void> {
      closing ??= (async () => {
        const closed = new Promise((resolve) => http.close(resolve));
        server.streams.stopAll();
        // Every response in flight finishes (event streams) or is cut (UI streams) first.
        await Promise.all(
          [...responses].map((open) => new Promise((resolve) => open.once('close', resolve))),
        );
        http.closeIdleConnections();
        await closed;
        await runtime.close();
      })();
      return closing;
    },
  };
}

/** What the routes share. */
interface Server {
  runtime: Runtime;
  guard: RequestGuard;
  /** Open event and UI message streams (ended or cut at shutdown). */
  streams: OpenStreams;
  chat: (request: Request) => Promise<Response>;
  console: (request: Request) => Promise<Response>;
  log: ReturnType<typeof createLogRoutes>;
  onError: HttpErrorListener | undefined;
  /** The built pages' folder. */
  webDist: string;
}

/** Every request's answer; errors become JSON with their status (`errorResponse`). */
async function answer(server: Server, request: Request): Promise<Response> {
  try {
    const url = new URL(request.url);
    return (
      (await webRoute(server, url, request)) ??
      (await sessionRoute(server, url, request)) ??
      errorResponse(
        new HttpAnswerError({
          status: 404,
          name: 'NotFound',
          message: `No route for ${url.pathname}.`,
        }),
      )
    );
  } catch (error) {
    return errorResponse(error, { onError: server.onError });
  }
}

/** The `/sessions/:id/…` routes; `undefined` when the request is not one of them. */
async function sessionRoute(
  { runtime, guard, streams }: Server,
  url: URL,
  request: Request,
): Promise<Response | undefined> {
  const match = /^\/sessions\/([^/]+)\/(messages|decisions|stop|facts|pending)$/.exec(url.pathname);
  if (match === null) return undefined;
  const sessionId = decodePathSegment(match[1] ?? '');
  const name = match[2] ?? '';
  const reads = name === 'facts' || name === 'pending';
  const method = reads ? 'GET' : 'POST';
  if (request.method !== method) {
    const refused = errorResponse(
      new HttpAnswerError({
        status: 405,
        name: 'MethodNotAllowed',
        message: `Use ${method} ${url.pathname}.`,
      }),
    );
    refused.headers.set('allow', method);
    return refused;
  }
  const action: RequestAction = { name, kind: reads ? 'read' : 'act', sessionId };
  if (reads) {
    await guard.check(request, action);
    return Response.json(
      name === 'facts' ? await runtime.facts(sessionId) : await runtime.pending(sessionId),
    );
  }
  const body = await guard.act(request, action, { optional: name === 'stop' });
  switch (name) {
    case 'messages': {
      const { text } = body;
      if (typeof text !== 'string') throw badInput('The body needs "text", a string');
      // send() throws SessionBusyError (409) before anything is streamed.
      const turn = await runtime.send({ sessionId, text });
      return eventStreamResponse(turn.events, streams);
    }
    case 'decisions': {
      const { callId, decision, reason } = body;
      if (typeof callId !== 'string') throw badInput('The body needs "callId", a string');
      if (!decisions.includes(decision as PermissionDecision)) {
        throw badInput(`"decision" must be one of ${decisions.join(', ')}`);
      }
      if (reason !== undefined && typeof reason !== 'string')
        throw badInput('"reason" must be a string');
      await runtime.decide({ sessionId, callId, decision: decision as PermissionDecision, reason });
      return Response.json({ decided: callId, decision });
    }
    default: {
      const { reason } = body;
      if (reason !== undefined && typeof reason !== 'string')
        throw badInput('"reason" must be a string');
      await runtime.stop({ sessionId, ...(reason === undefined ? {} : { reason }) });
      return Response.json({ stopped: sessionId });
    }
  }
}

/** The web example's routes (the chat, the log viewer, the pages); `undefined` when not one of them. */
async function webRoute(
  { guard, streams, chat, console: operator, log, webDist: pages }: Server,
  url: URL,
  request: Request,
): Promise<Response | undefined> {
  const { pathname } = url;
  if (pathname === '/api/chat' || pathname.startsWith('/api/chat/')) {
    return cutAtShutdown(await chat(request), streams);
  }
  if (pathname.startsWith('/api/console/')) return operator(request);
  if (
    request.method === 'GET' &&
    (pathname === '/' || pathname === '/log' || pathname.startsWith('/assets/'))
  ) {
    await guard.check(request, { name: 'page', kind: 'page' });
    const file = await staticFile(pathname, pages);
    if (file === undefined) {
      throw new HttpAnswerError({
        status: 404,
        name: 'NotFound',
        message: `No page at ${pathname}. Build the web pages first: npm run web (it builds them and starts this server).`,
      });
    }
    return new Response(new Uint8Array(file.body), {
      headers: { 'content-type': file.contentType },
    });
  }
  if (request.method !== 'GET') return undefined;
  await guard.check(request, { name: 'log', kind: 'read' });
  const logAnswer = await log(url);
  return logAnswer === undefined
    ? undefined
    : Response.json(logAnswer.body, { status: logAnswer.status });
}

function badInput(message: string) {
  return new HttpAnswerError({ status: 400, name: 'BadRequest', message: `${message}.` });
}

if (import.meta.main) {
  const port = Number(process.env.PORT ?? 3000);
  const server = await startServer({
    port,
    ...(process.env.HOST ? { host: process.env.HOST } : {}),
    ...(process.env.TURNLOG_TOKEN ? { token: process.env.TURNLOG_TOKEN } : {}),
  }).catch((error: unknown) => {
    // InsecureBindError: a HOST that is not loopback without TURNLOG_TOKEN.
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  });
  for (const run of server.recovered) {
    console.log(`recovered ${run.sessionId}: ${run.status} (interrupted in ${run.interruptedIn})`);
  }
  console.log(`listening on ${server.url}`);
  console.log(
    `try: curl -N -X POST ${server.url}/sessions/demo/messages -H 'content-type: application/json' -d '{"text":"Remember that the demo is at 3pm"}'`,
  );
  const shutDown = (signal: string) => {
    console.log(`${signal}: shutting down`);
    server.close().then(
      () => console.log('closed'),
      (error: unknown) => {
        console.error(error);
        process.exitCode = 1;
      },
    );
  };
  process.once('SIGINT', shutDown);
  process.once('SIGTERM', shutDown);
}
