// turnlog embedded in a plain node:http server: the shape a Node app takes to put an agent
// behind HTTP. Runs are streamed as server-sent events; permission asks are answered through
// their own endpoint, from any client, even after a restart.
//
// Run: npx node examples/embedded-server.ts   (PORT, default 3000; PORT=0 picks a free one)
//   POST /sessions/:id/messages   { text }                       → SSE: the run's facts and deltas
//   POST /sessions/:id/decisions  { callId, decision, reason? }  → 200 { decided }
//   POST /sessions/:id/stop       { reason? }                    → 200 { stopped }
//   GET  /sessions/:id/facts                                     → 200 [fact, …]
//   GET  /sessions/:id/pending                                   → 200 [decision, …]
// and the web example (examples/web, built by `npm run web`): the chat page at /, talking to
// /api/chat as useChat does (examples/web/server/chat-routes.ts; a page whose run waits for a
// person follows it through /api/chat/:id/moved), and the log viewer at /log
// (examples/web/server/log-routes.ts).
// Errors are JSON { error, message }: 400 bad input, 404 no such run or decision, 409 busy, damaged or
// already decided. Offline with a scripted model unless OPENAI_API_KEY or
// GOOGLE_GENERATIVE_AI_API_KEY is set; the log goes to .turnlog/embedded-server/ (under
// TURNLOG_DIR if set). Ctrl-C or SIGTERM shuts it down; unfinished runs resume on the next start.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import {
  lowdbStore,
  type PermissionDecision,
  type Runtime,
  type TurnHandle,
  TurnlogError,
} from '../index.ts';
import { HttpError } from './http-error.ts';
import { createNotesRuntime } from './notes-agent.ts';
import { createChatRoutes, track } from './web/server/chat-routes.ts';
import { createLogRoutes } from './web/server/log-routes.ts';
import { staticFile } from './web/server/static-files.ts';

/** HTTP status of each turnlog error the routes can meet. */
const statusOfError: Record<string, number> = {
  InvalidArgumentError: 400,
  InvalidDecisionError: 400,
  NoActiveRunError: 404,
  UnknownDecisionError: 404,
  SessionBusyError: 409,
  DamagedSessionError: 409,
  DecisionConflictError: 409,
  DecisionMismatchError: 409,
  RuntimeClosedError: 503,
};

const decisions: readonly PermissionDecision[] = ['allow', 'deny', 'report-unknown', 'abort'];

/**
 * Starts the server: a note-keeping agent on a lowdb log in `dir`, unfinished runs recovered,
 * listening on `host:port` (port 0: a free one). `close()` ends open event streams, stops
 * listening and closes the runtime (live runs stay unfinished in the log for the next start).
 *
 * @example
 * const server = await startServer({ port: 0, dir: '.turnlog/embedded-server' });
 * console.log(server.url); // http://127.0.0.1:54321
 * await server.close();
 */
export async function startServer(options: { port?: number; host?: string; dir?: string } = {}) {
  const dir = options.dir ?? path.join(process.env.TURNLOG_DIR ?? '.turnlog', 'embedded-server');
  const store = lowdbStore({ dir });
  const runtime = await createNotesRuntime(store);
  const recovered = await runtime.recover();
  // The handle of each session's unfinished run: UI message streams replay and follow it.
  const turns = new Map<string, TurnHandle>();
  for (const run of recovered) if (run.status !== 'damaged') track(turns, run.turn);
  const streams = new Set<ServerResponse>();
  const web: Web = {
    turns,
    chat: createChatRoutes(runtime, turns),
    log: createLogRoutes({ runtime, store, recovered }),
    uiStreams: new Set(),
  };
  const server = createServer((request, response) => {
    route(runtime, streams, web, request, response).catch((error: unknown) =>
      sendError(response, error),
    );
  });
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 3000, host, resolve);
  }).catch(async (error: unknown) => {
    await runtime.close();
    throw error;
  });
  const { port } = server.address() as AddressInfo;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${host}:${port}`,
    port,
    runtime,
    /** The log (subscribe to a session to follow runs nobody streams). */
    store,
    /** Runs recovered at start (see `runtime.recover()`). */
    recovered,
    close(): Promise<void> {
      closing ??= (async () => {
        const closed = new Promise((resolve) => server.close(resolve));
        for (const stream of streams) stream.end('event: shutdown\ndata: {}\n\n');
        // To a chat page this is a disconnect: it resumes from the log on the next start.
        for (const stream of web.uiStreams) stream.destroy();
        server.closeIdleConnections();
        await closed;
        await runtime.close();
      })();
      return closing;
    },
  };
}

/** What the web example's routes share. */
interface Web {
  turns: Map<string, TurnHandle>;
  chat: ReturnType<typeof createChatRoutes>;
  log: ReturnType<typeof createLogRoutes>;
  /** Open UI message streams (destroyed, not ended, on shutdown). */
  uiStreams: Set<ServerResponse>;
}

async function route(
  runtime: Runtime,
  streams: Set<ServerResponse>,
  web: Web,
  request: IncomingMessage,
  response: ServerResponse,
) {
  const url = new URL(request.url ?? '/', 'http://localhost');
  if (await webRoute(web, url, request, response)) return;
  const match = /^\/sessions\/([^/]+)\/(messages|decisions|stop|facts|pending)$/.exec(url.pathname);
  if (match === null) throw new HttpError(404, 'NotFound', `No route for ${url.pathname}.`);
  const sessionId = decodeURIComponent(match[1] ?? '');
  const action = match[2];
  const method = action === 'facts' || action === 'pending' ? 'GET' : 'POST';
  if (request.method !== method) {
    response.setHeader('allow', method);
    throw new HttpError(405, 'MethodNotAllowed', `Use ${method} ${url.pathname}.`);
  }
  switch (action) {
    case 'messages': {
      const { text } = await readBody(request);
      if (typeof text !== 'string') throw badInput('The body needs "text", a string');
      // send() throws SessionBusyError (409) before anything is streamed.
      const turn = await runtime.send({ sessionId, text });
      track(web.turns, turn);
      return stream(response, streams, turn.events);
    }
    case 'decisions': {
      const { callId, decision, reason } = await readBody(request);
      if (typeof callId !== 'string') throw badInput('The body needs "callId", a string');
      if (!decisions.includes(decision as PermissionDecision)) {
        throw badInput(`"decision" must be one of ${decisions.join(', ')}`);
      }
      if (reason !== undefined && typeof reason !== 'string')
        throw badInput('"reason" must be a string');
      await runtime.decide({ sessionId, callId, decision: decision as PermissionDecision, reason });
      return sendJson(response, 200, { decided: callId, decision });
    }
    case 'stop': {
      const { reason } = await readBody(request, { optional: true });
      if (reason !== undefined && typeof reason !== 'string')
        throw badInput('"reason" must be a string');
      await runtime.stop({ sessionId, ...(reason === undefined ? {} : { reason }) });
      return sendJson(response, 200, { stopped: sessionId });
    }
    case 'facts':
      return sendJson(response, 200, await runtime.facts(sessionId));
    case 'pending':
      return sendJson(response, 200, await runtime.pending(sessionId));
    default:
      throw new HttpError(404, 'NotFound', `No route for ${url.pathname}.`);
  }
}

/** Streams a run's events as server-sent events until `run.ended` (or the client leaves). */
async function stream(
  response: ServerResponse,
  streams: Set<ServerResponse>,
  events: AsyncIterable<{ type: string; seq?: number }>,
) {
  response.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
  });
  streams.add(response);
  const left = new Promise<{ done: true; value: undefined }>((resolve) =>
    response.once('close', () => resolve({ done: true, value: undefined })),
  );
  const iterator = events[Symbol.asyncIterator]();
  try {
    while (true) {
      // A client that disconnects stops the stream, not the run: it goes on and stays in the log.
      const next = await Promise.race([iterator.next(), left]);
      if (next.done) break;
      const event = next.value;
      const id = event.seq === undefined ? '' : `id: ${event.seq}\n`;
      response.write(`event: ${event.type}\n${id}data: ${JSON.stringify(event)}\n\n`);
    }
  } finally {
    streams.delete(response);
    response.end();
  }
}

/** The web example's routes; `false` when the request is not one of them. */
async function webRoute(
  web: Web,
  url: URL,
  request: IncomingMessage,
  response: ServerResponse,
): Promise<boolean> {
  const { pathname } = url;
  const chatStream = /^\/api\/chat\/([^/]+)\/(stream|messages|moved)$/.exec(pathname);
  if (request.method === 'POST' && pathname === '/api/chat') {
    const chat = await web.chat.post(await readBody(request, { limit: 4 * 1024 * 1024 }));
    await sendWebResponse(response, chat, web.uiStreams);
  } else if (request.method === 'GET' && chatStream !== null) {
    const sessionId = decodeURIComponent(chatStream[1] ?? '');
    if (chatStream[2] === 'messages') sendJson(response, 200, await web.chat.messages(sessionId));
    else if (chatStream[2] === 'moved') {
      const after = Number(url.searchParams.get('after') ?? Number.NaN);
      if (!Number.isSafeInteger(after) || after < 0) {
        throw new HttpError(400, 'BadRequest', '"after" must be the seq the page has seen.');
      }
      await sendWebResponse(response, web.chat.moved(sessionId, after), web.uiStreams);
    } else await sendWebResponse(response, web.chat.resume(sessionId), web.uiStreams);
  } else if (
    request.method === 'GET' &&
    (pathname === '/' || pathname === '/log' || pathname.startsWith('/assets/'))
  ) {
    const file = await staticFile(pathname);
    if (file === undefined) {
      throw new HttpError(
        404,
        'NotFound',
        `No page at ${pathname}. Build the web pages first: npm run web (it builds them and starts this server).`,
      );
    }
    response.writeHead(200, { 'content-type': file.contentType });
    response.end(file.body);
  } else {
    const answer = request.method === 'GET' ? await web.log(url) : undefined;
    if (answer === undefined) return false;
    sendJson(response, answer.status, answer.body);
  }
  return true;
}

/** Writes a fetch `Response` (a UI message stream) to the client; a failed stream is a disconnect. */
async function sendWebResponse(
  response: ServerResponse,
  answer: Response,
  open: Set<ServerResponse>,
) {
  response.writeHead(answer.status, Object.fromEntries(answer.headers));
  if (answer.body === null) return void response.end();
  const reader = answer.body.getReader();
  open.add(response);
  // A client that leaves stops its stream, not the run.
  response.once('close', () => void reader.cancel().catch(() => {}));
  try {
    while (true) {
      const { done, value } = await reader.read();
      if (done) break;
      response.write(value);
    }
    response.end();
  } catch {
    response.destroy();
  } finally {
    open.delete(response);
  }
}

async function readBody(
  request: IncomingMessage,
  { optional = false, limit = 64 * 1024 } = {},
): Promise<Record<string, unknown>> {
  let body = '';
  for await (const chunk of request) {
    body += chunk;
    if (body.length > limit)
      throw new HttpError(413, 'PayloadTooLarge', `The body is over ${limit / 1024} KiB.`);
  }
  if (body.trim() === '' && optional) return {};
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    throw badInput('The body must be JSON');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw badInput('The body must be a JSON object');
  }
  return value as Record<string, unknown>;
}

function badInput(message: string) {
  return new HttpError(400, 'BadRequest', `${message}.`);
}

function sendJson(response: ServerResponse, status: number, value: unknown) {
  response.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
  response.end(JSON.stringify(value));
}

function sendError(response: ServerResponse, error: unknown) {
  const status =
    error instanceof HttpError
      ? error.status
      : TurnlogError.isTurnlogError(error)
        ? (statusOfError[error.name] ?? 500)
        : 500;
  const { name, message } = error instanceof Error ? error : new Error(String(error));
  if (status === 500) console.error(error);
  if (response.headersSent) return void response.end();
  sendJson(response, status, { error: name, message });
}

if (import.meta.main) {
  const port = Number(process.env.PORT ?? 3000);
  const server = await startServer({
    port,
    ...(process.env.HOST ? { host: process.env.HOST } : {}),
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
