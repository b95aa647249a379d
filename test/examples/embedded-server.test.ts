import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Fact } from '../../events/facts.ts';
import { startServer } from '../../examples/embedded-server.ts';
import { expectDocumentedOutput, startExample, tempDir } from './example-process.ts';

/** One server-sent event as the client parsed it. */
interface ServerSentEvent {
  event: string;
  id: string | undefined;
  data: { type: string; seq?: number; [key: string]: unknown };
}

/** Parses a text/event-stream body into events, ending when the server ends the response. */
async function* readEvents(response: Response): AsyncGenerator<ServerSentEvent> {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true });
    let end = buffer.indexOf('\n\n');
    while (end !== -1) {
      const fields = new Map(
        buffer
          .slice(0, end)
          .split('\n')
          .map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 2)]),
      );
      buffer = buffer.slice(end + 2);
      end = buffer.indexOf('\n\n');
      yield {
        event: fields.get('event') ?? '',
        id: fields.get('id'),
        data: JSON.parse(fields.get('data') ?? '{}'),
      };
    }
  }
}

/** Reads events until one of `type` (included); every event read is appended to `seen`. */
async function readUntil(
  events: AsyncIterator<ServerSentEvent>,
  type: string,
  seen: ServerSentEvent[],
): Promise<ServerSentEvent> {
  while (true) {
    const next = await events.next();
    if (next.done) throw new Error(`the stream ended before ${type}`);
    seen.push(next.value);
    if (next.value.event === type) return next.value;
  }
}

let server: Awaited<ReturnType<typeof startServer>>;
let dir: string;

async function call(method: string, route: string, body?: unknown) {
  const response = await fetch(`${server.url}${route}`, {
    method,
    headers: { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
  return { status: response.status, body: await response.json() };
}

async function postMessage(sessionId: string, text: string) {
  const response = await fetch(`${server.url}/sessions/${sessionId}/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ text }),
  });
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
  return readEvents(response);
}

describe('examples/embedded-server.ts over HTTP on 127.0.0.1', () => {
  beforeEach(async () => {
    // Offline whatever the environment says: the scripted note keeper.
    vi.stubEnv('OPENAI_API_KEY', '');
    vi.stubEnv('GOOGLE_GENERATIVE_AI_API_KEY', '');
    vi.spyOn(console, 'log').mockImplementation(() => {});
    dir = path.join(tempDir(), 'log');
    server = await startServer({ port: 0, dir });
  });
  afterEach(async () => {
    await server.close();
    vi.unstubAllEnvs();
    vi.restoreAllMocks();
  });

  it('answers a runtime call that throws a plain Error with a 500 without its message, and logs it with the same id', async () => {
    const secret = new Error('connect ECONNREFUSED postgres://admin:hunter2@db.internal:5432');
    vi.spyOn(server.runtime, 'facts').mockRejectedValue(secret);
    const logged = vi.spyOn(console, 'error').mockImplementation(() => {});
    const failed = await call('GET', '/sessions/s1/facts');
    expect(failed.status).toBe(500);
    expect(JSON.stringify(failed.body)).not.toContain('hunter2');
    expect(failed.body).toEqual({
      error: 'InternalError',
      message: `internal error; the server logged it as ${failed.body.errorId}`,
      errorId: expect.stringMatching(/^[0-9a-f-]{36}$/),
    });
    expect(logged.mock.calls).toEqual([
      [`turnlog: internal error ${failed.body.errorId}:`, secret],
    ]);
  });

  it('streams a run as SSE, parks at the ask, refuses a busy second message, and finishes once /decisions allows', async () => {
    const events = await postMessage('s1', 'Remember that the demo is at 3pm');
    const seen: ServerSentEvent[] = [];
    const ask = await readUntil(events, 'tool.permission.requested', seen);
    const note = { title: 'the demo is at 3pm', text: 'the demo is at 3pm' };
    expect(ask.data).toMatchObject({ callId: 'call_2', name: 'saveNote', input: note });

    expect(await call('GET', '/sessions/s1/pending')).toEqual({
      status: 200,
      body: [
        {
          kind: 'permission',
          callId: 'call_2',
          name: 'saveNote',
          input: note,
          inputHash: ask.data.inputHash,
        },
      ],
    });
    const busy = await call('POST', '/sessions/s1/messages', { text: 'And another thing' });
    expect(busy.status).toBe(409);
    expect(busy.body.error).toBe('SessionBusyError');
    expect(busy.body.message).toMatch(/^Session s1 has an unfinished run/);
    const unknown = await call('POST', '/sessions/s1/decisions', {
      callId: 'call_9',
      decision: 'allow',
    });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toBe('UnknownDecisionError');
    const invalid = await call('POST', '/sessions/s1/decisions', {
      callId: 'call_2',
      decision: 'maybe',
    });
    expect(invalid).toEqual({
      status: 400,
      body: {
        error: 'BadRequest',
        message: '"decision" must be one of allow, deny, report-unknown, abort.',
      },
    });

    expect(
      await call('POST', '/sessions/s1/decisions', { callId: 'call_2', decision: 'allow' }),
    ).toEqual({ status: 200, body: { decided: 'call_2', decision: 'allow' } });
    for await (const event of { [Symbol.asyncIterator]: () => events }) seen.push(event);

    const facts = await call('GET', '/sessions/s1/facts');
    expect(facts.status).toBe(200);
    const log = facts.body as Fact[];
    expect(log.map((fact) => fact.type)).toEqual([
      'run.started',
      'step.started',
      'step.completed',
      'tool.permission.requested',
      'tool.permission.decided',
      'tool.started',
      'tool.settled',
      'step.started',
      'step.completed',
      'run.ended',
    ]);
    expect(log.at(-1)).toMatchObject({ status: 'completed', reason: 'end_turn' });
    // Every fact was streamed once, in order, with its seq as the SSE id; deltas have no id.
    const streamedFacts = seen.filter((event) => event.id !== undefined);
    expect(streamedFacts.map((event) => event.data)).toEqual(log);
    expect(streamedFacts.map((event) => event.id)).toEqual(log.map((fact) => String(fact.seq)));
    expect(seen.map((event) => event.event)).toEqual(seen.map((event) => event.data.type));
    const text = seen.flatMap((event) => (event.event === 'text.delta' ? [event.data.text] : []));
    expect(text.join('')).toBe(
      'I will save that as a note.Done. Saved the note "the demo is at 3pm".',
    );
    expect(await call('GET', '/sessions/s1/pending')).toEqual({ status: 200, body: [] });
  });

  it('stops a parked run through /stop: the open stream ends with run.ended aborted', async () => {
    const events = await postMessage('s2', 'Remember to buy milk');
    const seen: ServerSentEvent[] = [];
    await readUntil(events, 'tool.permission.requested', seen);
    expect(await call('POST', '/sessions/s2/stop', { reason: 'changed my mind' })).toEqual({
      status: 200,
      body: { stopped: 's2' },
    });
    for await (const event of { [Symbol.asyncIterator]: () => events }) seen.push(event);
    expect(seen.slice(-4).map((event) => [event.event, event.data.state])).toEqual([
      ['tool.permission.requested', 'awaitingPermission'],
      ['run.stop.requested', 'settlingTools.stopping'],
      ['tool.settled', 'terminal'],
      ['run.ended', 'terminal'],
    ]);
    expect(seen.at(-1)?.data).toMatchObject({ status: 'aborted', reason: 'stop_requested' });
    expect(seen.at(-2)?.data).toMatchObject({ callId: 'call_2', outcome: 'cancelled' });
    const again = await call('POST', '/sessions/s2/stop');
    expect(again.status).toBe(404);
    expect(again.body.error).toBe('NoActiveRunError');
  });

  it('answers bad requests with JSON errors and the right status', async () => {
    expect(await call('POST', '/sessions/s3/messages', 'not json')).toEqual({
      status: 400,
      body: { error: 'HttpRefusedError', reason: 'bad-request', message: 'The body must be JSON.' },
    });
    expect(await call('POST', '/sessions/s3/messages', { message: 'hi' })).toEqual({
      status: 400,
      body: { error: 'BadRequest', message: 'The body needs "text", a string.' },
    });
    const empty = await call('POST', '/sessions/s3/messages', { text: ' ' });
    expect(empty.status).toBe(400);
    expect(empty.body.error).toBe('InvalidArgumentError');
    const noRun = await call('POST', '/sessions/s3/decisions', { callId: 'c', decision: 'allow' });
    expect(noRun.status).toBe(404);
    expect(noRun.body.error).toBe('NoActiveRunError');
    expect(await call('GET', '/sessions/s3/facts')).toEqual({ status: 200, body: [] });
    expect(await call('GET', '/nowhere')).toEqual({
      status: 404,
      body: { error: 'NotFound', message: 'No route for /nowhere.' },
    });
    expect(await call('POST', '/sessions/s3/facts', {})).toEqual({
      status: 405,
      body: { error: 'MethodNotAllowed', message: 'Use GET /sessions/s3/facts.' },
    });
  });

  it('keeps the run going when the client of its stream disconnects', async () => {
    const controller = new AbortController();
    const response = await fetch(`${server.url}/sessions/s5/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ text: 'Remember the blue door' }),
      signal: controller.signal,
    });
    await readUntil(readEvents(response)[Symbol.asyncIterator](), 'tool.permission.requested', []);
    controller.abort();
    // The run ends without anyone streaming it; the log has all of it.
    const ended = new Promise<void>((resolve) => {
      server.store.subscribe('s5', (fact) => {
        if (fact.type === 'run.ended') resolve();
      });
    });
    expect(
      await call('POST', '/sessions/s5/decisions', { callId: 'call_2', decision: 'allow' }),
    ).toEqual({ status: 200, body: { decided: 'call_2', decision: 'allow' } });
    await ended;
    const facts = (await call('GET', '/sessions/s5/facts')).body as Fact[];
    expect(facts.at(-1)).toMatchObject({ type: 'run.ended', status: 'completed' });
    expect(facts.filter((fact) => fact.type === 'tool.settled')).toEqual([
      expect.objectContaining({ outcome: 'success', text: 'Saved the note "the blue door".' }),
    ]);
  });

  it('resumes a run left parked by a previous server: the decision arrives after the restart', async () => {
    const events = await postMessage('s4', 'Remember the code 1234');
    await readUntil(events, 'tool.permission.requested', []);
    await server.close();

    server = await startServer({ port: 0, dir });
    expect(server.recovered.map((run) => [run.sessionId, run.status])).toEqual([['s4', 'parked']]);
    expect(
      await call('POST', '/sessions/s4/decisions', { callId: 'call_2', decision: 'deny' }),
    ).toEqual({ status: 200, body: { decided: 'call_2', decision: 'deny' } });
    const [recovered] = server.recovered;
    if (recovered?.status !== 'parked')
      throw new Error(`expected a parked run, got ${recovered?.status}`);
    const result = await recovered.turn.done;
    expect(result).toMatchObject({ status: 'completed', text: 'All right, I did not save it.' });
    const facts = (await call('GET', '/sessions/s4/facts')).body as Fact[];
    expect(facts.filter((fact) => fact.type === 'tool.started')).toEqual([]);
    expect(facts.slice(3).map((fact) => fact.type)).toEqual([
      'tool.permission.requested',
      'run.recovered',
      'tool.permission.decided',
      'tool.settled',
      'step.started',
      'step.completed',
      'run.ended',
    ]);
    expect(facts[6]).toMatchObject({ type: 'tool.settled', outcome: 'denied' });
  });
});

it('runs as a program: PORT=0 picks a free port, and SIGTERM shuts it down with exit 0', async () => {
  const program = startExample('embedded-server', {
    env: { PORT: '0', TURNLOG_DIR: tempDir() },
  });
  await program.next('try: ');
  const started = await program.next('\n');
  const url = /^listening on (http:\/\/127\.0\.0\.1:\d+)$/m.exec(started)?.[1] as string;
  expectDocumentedOutput('embedded-server', started.replaceAll(url, 'http://127.0.0.1:3000'));
  const response = await fetch(`${url}/sessions/demo/facts`);
  expect(await response.json()).toEqual([]);
  program.child.kill('SIGTERM');
  const end = await program.exited;
  expect(end.stderr).toBe('');
  expect(end.code).toBe(0);
  expect(end.stdout.trimEnd().split('\n').slice(-2)).toEqual(['SIGTERM: shutting down', 'closed']);
});
