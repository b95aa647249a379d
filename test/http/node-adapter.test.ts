import { createServer, type Server } from 'node:http';
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { clientAddress } from '../../http/client-address.ts';
import { HttpRefusedError, InsecureBindError, refusalResponse } from '../../http/http-errors.ts';
import { listenTrusted } from '../../http/listen-trusted.ts';
import { createNodeHandler } from '../../http/node-adapter.ts';
import { decodePathSegment, readJsonBody } from '../../http/request-body.ts';
import { RequestGuard } from '../../http/request-guard.ts';

let server: Server | undefined;
const serverSockets: Socket[] = [];

afterEach(async () => {
  for (const socket of serverSockets.splice(0)) socket.destroy();
  await new Promise((resolve) => (server?.listening ? server.close(resolve) : resolve(undefined)));
  server = undefined;
});

/** A Node server on a free loopback port over `handler`, through the adapter. */
async function serve(
  handler: (request: Request) => Response | Promise<Response>,
  options: Parameters<typeof createNodeHandler>[1] = {},
) {
  server = createServer(createNodeHandler(handler, options));
  server.on('connection', (socket) => serverSockets.push(socket));
  return listenTrusted(server, { guard: new RequestGuard(), port: 0 });
}

/** Sends raw bytes over TCP in separate writes, each delivered to the server before the next. */
async function sendInParts(port: number, parts: Uint8Array[]): Promise<string> {
  const client = connect(port, '127.0.0.1');
  client.setNoDelay(true);
  await new Promise((resolve) => client.once('connect', resolve));
  const answer = new Promise<string>((resolve) => {
    let text = '';
    client.on('data', (chunk) => (text += chunk));
    client.once('close', () => resolve(text));
  });
  let sent = 0;
  for (const part of parts) {
    client.write(part);
    sent += part.byteLength;
    // The server has read every byte so far before the next part leaves: separate chunks.
    await expect.poll(() => serverSockets.at(-1)?.bytesRead ?? 0, { timeout: 10_000 }).toBe(sent);
  }
  return answer;
}

describe('the Node adapter', () => {
  it('keeps a multi-byte character split across TCP chunks intact (decoded once per body)', async () => {
    const received: unknown[] = [];
    const { port } = await serve(async (request) => {
      received.push(await readJsonBody(request));
      return Response.json({ ok: true });
    });
    const body = new TextEncoder().encode(JSON.stringify({ text: 'Grüße €𝄞' }));
    const head = new TextEncoder().encode(
      `POST /x HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\ncontent-type: application/json\r\ncontent-length: ${body.byteLength}\r\nconnection: close\r\n\r\n`,
    );
    // Split inside ü (2 bytes), inside € (3 bytes) and inside 𝄞 (4 bytes).
    const uAt = body.indexOf(0xc3) + 1;
    const euroAt = body.indexOf(0xe2) + 2;
    const clefAt = body.indexOf(0xf0) + 1;
    const answer = await sendInParts(port, [
      head,
      body.slice(0, uAt),
      body.slice(uAt, euroAt),
      body.slice(euroAt, clefAt),
      body.slice(clefAt),
    ]);
    expect(answer.startsWith('HTTP/1.1 200 OK')).toBe(true);
    expect(received).toEqual([{ text: 'Grüße €𝄞' }]);
  });

  it('answers a bad percent-encoding in the path with 400, not a 500 URIError', async () => {
    const { url } = await serve((request) => {
      const segment = new URL(request.url).pathname.split('/')[2] ?? '';
      return Response.json({ id: decodePathSegment(segment) });
    });
    const bad = await fetch(`${url}/sessions/%E0%A4%A/facts`);
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({
      error: 'HttpRefusedError',
      reason: 'bad-request',
      message: 'The path segment "%E0%A4%A" is not valid percent-encoded UTF-8.',
    });
    const good = await fetch(`${url}/sessions/s%C3%A9ance/facts`);
    expect(await good.json()).toEqual({ id: 'séance' });
  });

  it('records the client address beside the request, and keeps a // path on this host', async () => {
    const seen: string[] = [];
    const { port } = await serve((request) => {
      seen.push(`${clientAddress(request)} ${request.url}`);
      return new Response('ok');
    });
    const answer = await sendInParts(port, [
      new TextEncoder().encode(
        `GET //evil.example/x HTTP/1.1\r\nHost: localhost:${port}\r\nconnection: close\r\n\r\n`,
      ),
    ]);
    expect(answer.startsWith('HTTP/1.1 200 OK')).toBe(true);
    expect(seen).toEqual([`127.0.0.1 http://localhost:${port}//evil.example/x`]);
  });

  it('answers a Host that is not a host name with 400', async () => {
    const { port } = await serve(() => new Response('ok'));
    const answer = await sendInParts(port, [
      new TextEncoder().encode(
        `GET / HTTP/1.1\r\nHost: evil.example/x\r\nconnection: close\r\n\r\n`,
      ),
    ]);
    expect(answer.split('\r\n')[0]).toBe('HTTP/1.1 400 Bad Request');
  });

  it('answers an error the handler throws with a bare 500 and reports it with the id the client got', async () => {
    const reported: { error: unknown; errorId: string }[] = [];
    const secret = new Error('password=hunter2 at /srv/app/db.ts');
    const { url } = await serve(
      () => {
        throw secret;
      },
      { onError: (error, { errorId }) => reported.push({ error, errorId }) },
    );
    const response = await fetch(url);
    expect(response.status).toBe(500);
    const text = await response.text();
    expect(text).not.toContain('hunter2');
    expect(text).not.toContain('/srv/app');
    const body = JSON.parse(text);
    expect(body).toEqual({
      error: 'InternalError',
      message: `internal error; the server logged it as ${body.errorId}`,
      errorId: expect.stringMatching(/^[0-9a-f-]{36}$/),
    });
    expect(reported).toEqual([{ error: secret, errorId: body.errorId }]);
  });

  it('bounds the requests one client holds open (429 past the bound), and frees a slot when a stream ends', async () => {
    const streams: ReadableStreamDefaultController<Uint8Array>[] = [];
    const { url } = await serve(
      () =>
        new Response(
          new ReadableStream<Uint8Array>({ start: (controller) => void streams.push(controller) }),
        ),
      { maxRequestsPerClient: 2 },
    );
    const first = await fetch(url);
    const second = await fetch(url);
    expect([first.status, second.status]).toEqual([200, 200]);
    const third = await fetch(url);
    expect(third.status).toBe(429);
    expect(await third.json()).toMatchObject({ reason: 'too-many' });
    streams[0]?.close();
    expect(await first.text()).toBe('');
    await expect.poll(async () => (await fetch(url)).status, { timeout: 10_000 }).toBe(200);
    await second.body?.cancel();
  });

  it('stops streaming when the client leaves: the response body is cancelled', async () => {
    let cancelled = 0;
    const { url } = await serve(
      () =>
        new Response(
          new ReadableStream<Uint8Array>({
            start: (controller) => controller.enqueue(new TextEncoder().encode('first')),
            cancel: () => {
              cancelled += 1;
            },
          }),
        ),
    );
    const controller = new AbortController();
    const response = await fetch(url, { signal: controller.signal });
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toBe('first');
    controller.abort();
    await expect.poll(() => cancelled, { timeout: 10_000 }).toBe(1);
  });
});

describe('listenTrusted', () => {
  it('binds loopback by default', async () => {
    server = createServer(() => {});
    const bound = await listenTrusted(server, { guard: new RequestGuard(), port: 0 });
    expect(bound.host).toBe('127.0.0.1');
    expect(bound.url).toBe(`http://127.0.0.1:${bound.port}`);
  });

  it('refuses a non-loopback bind without a token, and never listens', async () => {
    server = createServer(() => {});
    for (const host of ['0.0.0.0', '::', '192.0.2.1']) {
      const error = await listenTrusted(server, { guard: new RequestGuard(), host, port: 0 }).catch(
        (caught: unknown) => caught,
      );
      expect(InsecureBindError.isInstance(error)).toBe(true);
      expect(error).toMatchObject({ host });
    }
    expect(server.listening).toBe(false);
  });

  it('binds a non-loopback host when the guard has a token', async () => {
    server = createServer(() => {});
    const bound = await listenTrusted(server, {
      guard: new RequestGuard({ token: 'a-long-token' }),
      host: '0.0.0.0',
      port: 0,
    });
    expect(bound.host).toBe('0.0.0.0');
    expect(server.listening).toBe(true);
  });
});

describe('the Node adapter with a body over the limit', () => {
  it('answers 413 to a chunked body past maxBodyBytes, discards the rest it is sent later, and keeps serving', async () => {
    const guard = new RequestGuard({ maxBodyBytes: 1024 });
    // As the example server does: the refusal is answered, the connection kept alive.
    const { port, url } = await serve(async (request) => {
      try {
        return Response.json(await guard.act(request, { name: 'send', kind: 'act' }));
      } catch (error) {
        if (HttpRefusedError.isInstance(error)) return refusalResponse(error);
        throw error;
      }
    });
    const chunk = (text: string) => `${text.length.toString(16)}\r\n${text}\r\n`;
    const head = `POST /x HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n`;
    const first = new TextEncoder().encode(`${head}${chunk(`{"text":"${'x'.repeat(1500)}`)}`);
    const rest = new TextEncoder().encode(`${chunk(`${'y'.repeat(3000)}"}`)}0\r\n\r\n`);
    const client = connect(port, '127.0.0.1');
    await new Promise((resolve) => client.once('connect', resolve));
    let answer = '';
    client.on('data', (data) => {
      answer += data;
    });
    client.write(first);
    await expect.poll(() => answer, { timeout: 10_000 }).toContain('"reason":"too-large"');
    expect(answer.split('\r\n')[0]).toBe('HTTP/1.1 413 Payload Too Large');
    // The rest arrives after the answer: read and dropped (its late end must not throw).
    client.write(rest);
    const total = first.byteLength + rest.byteLength;
    await expect.poll(() => serverSockets.at(-1)?.bytesRead ?? 0, { timeout: 10_000 }).toBe(total);
    client.destroy();
    const next = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"ok":1}',
    });
    expect(await next.json()).toEqual({ ok: 1 });
  });
});
