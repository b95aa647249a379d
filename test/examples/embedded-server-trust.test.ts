// The example server behind the trust layer (issue 29 items 3 and 6): what a hostile page or
// client sends is refused before anything acts, and bodies and paths are decoded safely.
import { connect, type Socket } from 'node:net';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Fact } from '../../events/facts.ts';
import { startServer } from '../../examples/embedded-server.ts';
import { tempDir } from './example-process.ts';

let server: Awaited<ReturnType<typeof startServer>>;

/**
 * Raw HTTP/1.1 over TCP, in separate writes, each read by the server before the next leaves;
 * resolves with what came back once `until` matches it or the connection closes.
 */
async function rawRequest(port: number, parts: Uint8Array[], until = /$^/): Promise<string> {
  const serverSockets: Socket[] = [];
  const onConnection = (socket: Socket) => serverSockets.push(socket);
  server.http.on('connection', onConnection);
  const client = connect(port, '127.0.0.1');
  client.setNoDelay(true);
  await new Promise((resolve) => client.once('connect', resolve));
  let text = '';
  const answered = new Promise<void>((resolve) => {
    client.on('data', (chunk) => {
      text += chunk;
      if (until.test(text)) resolve();
    });
    client.once('close', () => resolve());
  });
  let sent = 0;
  for (const part of parts) {
    client.write(part);
    sent += part.byteLength;
    await expect.poll(() => serverSockets[0]?.bytesRead ?? 0, { timeout: 10_000 }).toBe(sent);
  }
  await answered;
  client.destroy();
  server.http.off('connection', onConnection);
  return text;
}

const encode = (text: string) => new TextEncoder().encode(text);

async function facts(sessionId: string): Promise<Fact[]> {
  return (await fetch(`${server.url}/sessions/${sessionId}/facts`)).json();
}

describe('examples/embedded-server.ts behind the trust layer', () => {
  beforeEach(async () => {
    vi.stubEnv('OPENAI_API_KEY', '');
    vi.stubEnv('GOOGLE_GENERATIVE_AI_API_KEY', '');
    vi.spyOn(console, 'log').mockImplementation(() => {});
    server = await startServer({ port: 0, dir: path.join(tempDir(), 'log') });
  });
  afterEach(async () => {
    await server.close();
    vi.unstubAllEnvs();
    vi.restoreAllMocks();
  });

  it('stores a message whose multi-byte characters were split across TCP chunks intact', async () => {
    const body = encode(JSON.stringify({ text: 'Remember: Grüße, 5 €, 𝄞' }));
    const head = encode(
      `POST /sessions/utf8/messages HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\ncontent-type: application/json\r\ncontent-length: ${body.byteLength}\r\nconnection: close\r\n\r\n`,
    );
    const cuts = [body.indexOf(0xc3) + 1, body.indexOf(0xe2) + 2, body.indexOf(0xf0) + 3];
    const answer = await rawRequest(
      server.port,
      [
        head,
        body.slice(0, cuts[0]),
        body.slice(cuts[0], cuts[1]),
        body.slice(cuts[1], cuts[2]),
        body.slice(cuts[2]),
      ],
      /event: run\.started/,
    );
    expect(answer.split('\r\n')[0]).toBe('HTTP/1.1 200 OK');
    const started = (await facts('utf8')).find((fact) => fact.type === 'run.started');
    expect(started).toMatchObject({ input: { text: 'Remember: Grüße, 5 €, 𝄞' } });
    expect(JSON.stringify(started)).not.toContain('\ufffd');
  });

  it('answers a bad percent-encoding in a path with 400 on every route that decodes one', async () => {
    for (const route of ['/sessions/%E0%A4%A/facts', '/sessions/%/log', '/api/chat/%ZZ/messages']) {
      const response = await fetch(`${server.url}${route}`);
      expect([route, response.status]).toEqual([route, 400]);
      expect(await response.json()).toMatchObject({
        error: 'HttpRefusedError',
        reason: 'bad-request',
      });
    }
    const post = await fetch(`${server.url}/sessions/a%C3/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ text: 'hi' }),
    });
    expect(post.status).toBe(400);
  });

  it('refuses a cross-site text/plain form, a no-cors fetch and a rebinding Host before acting', async () => {
    const forged = await rawRequest(server.port, [
      encode(
        `POST /sessions/forms/messages HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\nOrigin: http://attacker.example\r\ncontent-type: text/plain\r\ncontent-length: 19\r\nconnection: close\r\n\r\n{"text":"hi","a":1}`,
      ),
    ]);
    expect(forged.split('\r\n')[0]).toBe('HTTP/1.1 403 Forbidden');
    const sameOriginForm = await fetch(`${server.url}/sessions/forms/messages`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain', origin: server.url },
      body: '{"text":"hi"}',
    });
    expect(sameOriginForm.status).toBe(415);
    const rebound = await rawRequest(server.port, [
      encode(
        `POST /sessions/forms/messages HTTP/1.1\r\nHost: rebind.attacker.example:${server.port}\r\nOrigin: http://rebind.attacker.example:${server.port}\r\ncontent-type: application/json\r\ncontent-length: 13\r\nconnection: close\r\n\r\n{"text":"hi"}`,
      ),
    ]);
    expect(rebound.split('\r\n')[0]).toBe('HTTP/1.1 403 Forbidden');
    expect(rebound).toContain('"reason":"host"');
    const reboundRead = await rawRequest(server.port, [
      encode(
        `GET /sessions/forms/facts HTTP/1.1\r\nHost: rebind.attacker.example\r\nconnection: close\r\n\r\n`,
      ),
    ]);
    expect(reboundRead.split('\r\n')[0]).toBe('HTTP/1.1 403 Forbidden');
    expect(await facts('forms')).toEqual([]);
  });
});

describe('startServer binds', () => {
  it('refuses a non-loopback host without a token, and listens on one with it', async () => {
    const dir = path.join(tempDir(), 'log');
    await expect(startServer({ port: 0, dir, host: '0.0.0.0' })).rejects.toMatchObject({
      name: 'InsecureBindError',
      host: '0.0.0.0',
    });
    const open = await startServer({ port: 0, dir, host: '0.0.0.0', token: 'example-token-1' });
    try {
      // Loopback clients too need the token now.
      const url = `http://127.0.0.1:${open.port}`;
      expect((await fetch(`${url}/sessions/t/facts`)).status).toBe(401);
      const withToken = await fetch(`${url}/sessions/t/facts`, {
        headers: { authorization: 'Bearer example-token-1' },
      });
      expect([withToken.status, await withToken.json()]).toEqual([200, []]);
    } finally {
      await open.close();
    }
  });
});
