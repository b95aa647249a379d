// Issue 29 item 3 in a real browser: a page of another site tries to act on the example server
// on 127.0.0.1: a plain HTML form (enctype=text/plain, no JavaScript) approving a pending call,
// fetch(no-cors) starting a run, and a page whose name was rebound to 127.0.0.1 (DNS rebinding,
// simulated with Chromium's host resolver rules). Every one reaches the server, is refused, and
// leaves nothing in the log.
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Fact } from '../../events/facts.ts';
import { startServer } from '../../examples/embedded-server.ts';
import { hasChromium, launchChromium } from './chromium.ts';

/** The attacker's page: a form that approves `callId` in `sessionId` when submitted. */
function attackerPage(target: string, sessionId: string, callId: string): string {
  // text/plain sends `name=value\r\n`: this name and value make the body valid JSON.
  const name = `{"callId":"${callId}","decision":"allow","reason":"`;
  return `<!doctype html><title>win a prize</title>
<form id="approve" method="POST" enctype="text/plain" action="${target}/sessions/${sessionId}/decisions">
  <input name='${name}' value='"}'><button>Claim</button>
</form>`;
}

describe.skipIf(!hasChromium)('the example server against another site, in Chromium', () => {
  let server: Awaited<ReturnType<typeof startServer>>;
  let attacker: Server;
  let attackerUrl: string;
  let browser: BrowserContext;
  let page: Page;
  let dir: string;
  /** Every request the example server answered: method, path, status. */
  const answered: string[] = [];

  const facts = async (sessionId: string): Promise<Fact[]> =>
    (await fetch(`${server.url}/sessions/${sessionId}/facts`)).json();

  /** Starts a run that parks at the saveNote ask; returns the pending call's id. */
  async function parkedRun(sessionId: string): Promise<string> {
    const response = await fetch(`${server.url}/sessions/${sessionId}/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ text: 'Remember that the demo is at 3pm' }),
    });
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    let text = '';
    while (!text.includes('event: tool.permission.requested')) {
      const next = await reader.read();
      if (next.done) throw new Error('the run ended before its ask');
      text += new TextDecoder().decode(next.value);
    }
    await reader.cancel();
    const pending = await (await fetch(`${server.url}/sessions/${sessionId}/pending`)).json();
    return pending[0].callId;
  }

  beforeAll(async () => {
    vi.stubEnv('OPENAI_API_KEY', '');
    vi.stubEnv('GOOGLE_GENERATIVE_AI_API_KEY', '');
    dir = mkdtempSync(path.join(tmpdir(), 'turnlog-cross-site-'));
    server = await startServer({ port: 0, dir });
    server.http.on('request', (request, response) =>
      response.once('finish', () =>
        answered.push(`${request.method} ${request.url} ${response.statusCode}`),
      ),
    );
    let html = '';
    attacker = createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      response.end(html);
    });
    await new Promise<void>((resolve) => attacker.listen(0, '127.0.0.1', resolve));
    const { port } = attacker.address() as { port: number };
    // localhost, not 127.0.0.1: another site than the server's (ports alone make the same site).
    attackerUrl = `http://localhost:${port}`;
    const callId = await parkedRun('form-target');
    html = attackerPage(server.url, 'form-target', callId);
    browser = await launchChromium(['--host-resolver-rules=MAP rebind.attacker.test 127.0.0.1']);
    page = browser.pages()[0] ?? (await browser.newPage());
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => attacker?.close(resolve));
    await server?.close();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    vi.unstubAllEnvs();
  });

  it('refuses a text/plain form from another site approving a pending call: nothing is decided', async () => {
    const before = await facts('form-target');
    await page.goto(`${attackerUrl}/`);
    const [response] = await Promise.all([
      page.waitForResponse((candidate) => candidate.url().endsWith('/decisions')),
      page.getByRole('button', { name: 'Claim' }).click(),
    ]);
    expect(response.status()).toBe(403);
    expect(await response.json()).toMatchObject({
      error: 'HttpRefusedError',
      reason: 'cross-origin',
    });
    expect(answered).toContain('POST /sessions/form-target/decisions 403');
    const after = await facts('form-target');
    expect(after).toEqual(before);
    expect(after.filter((fact) => fact.type === 'tool.permission.decided')).toEqual([]);
    expect(after.filter((fact) => fact.type === 'tool.started')).toEqual([]);
  });

  it('refuses fetch(no-cors) from another site starting a run, on both routes that start one', async () => {
    await page.goto(`${attackerUrl}/`);
    const sent = await page.evaluate(async (target) => {
      const message = { id: 'm1', role: 'user', parts: [{ type: 'text', text: 'Remember x' }] };
      const opaque = await Promise.all([
        fetch(`${target}/sessions/no-cors/messages`, {
          method: 'POST',
          mode: 'no-cors',
          headers: { 'content-type': 'text/plain' },
          body: JSON.stringify({ text: 'Remember x' }),
        }),
        fetch(`${target}/api/chat`, {
          method: 'POST',
          mode: 'no-cors',
          body: JSON.stringify({
            id: 'no-cors-chat',
            messages: [message],
            trigger: 'submit-message',
          }),
        }),
      ]);
      return opaque.map((response) => response.type);
    }, server.url);
    expect(sent).toEqual(['opaque', 'opaque']);
    await expect
      .poll(() => answered.filter((line) => /no-cors|api\/chat/.test(line)), { timeout: 20_000 })
      .toEqual(
        expect.arrayContaining(['POST /sessions/no-cors/messages 403', 'POST /api/chat 403']),
      );
    expect(await facts('no-cors')).toEqual([]);
    expect(await facts('no-cors-chat')).toEqual([]);
  });

  it('refuses a page whose name was rebound to 127.0.0.1, its page and its same-origin actions', async () => {
    const rebound = `http://rebind.attacker.test:${server.port}`;
    const navigation = await page.goto(`${rebound}/`);
    expect(navigation?.status()).toBe(403);
    // The rebound page is same-origin with the server by URL: only Host tells them apart.
    const status = await page.evaluate(async (sessionId) => {
      const response = await fetch(`/sessions/${sessionId}/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ text: 'Remember y' }),
      });
      const read = await fetch(`/sessions/${sessionId}/facts`);
      return [response.status, (await response.json()).reason, read.status];
    }, 'rebound');
    expect(status).toEqual([403, 'host', 403]);
    expect(await facts('rebound')).toEqual([]);
  });
});
