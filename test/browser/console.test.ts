// Issue 28 item 2 in a real browser: the operator console on the log viewer page (/log) lists
// every session's latest run with counts per status, searches, and acts through the runtime:
// an approval clicked on a live run's pending call moves that run to its end. A page of another
// site that tries the console's actions (a text/plain form, fetch no-cors, a CORS fetch) is
// refused and leaves nothing in the log. The screenshot goes to test-output/browser/console.png;
// with TURNLOG_UPDATE_SCREENSHOTS=1 also to docs/console.png (the README's).
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Fact } from '../../events/facts.ts';
import { startServer } from '../../examples/embedded-server.ts';
import { repoRoot } from '../examples/example-process.ts';
import { hasChromium, launchChromium } from './chromium.ts';
import { buildWebPages } from './web-pages.ts';

/** Polls until the page shows it (the page, the server and the browser share 2 busy cores). */
const eventually = <T>(read: () => Promise<T> | T) => expect.poll(read, { timeout: 20_000 });

/** The attacker's page: a form (no JavaScript) approving `callId` through the console's route. */
function attackerPage(target: string, sessionId: string, callId: string): string {
  // text/plain sends `name=value\r\n`: this name and value make the body valid JSON.
  const name = `{"callId":"${callId}","decision":"allow","reason":"`;
  return `<!doctype html><title>win a prize</title>
<form id="approve" method="POST" enctype="text/plain" action="${target}/api/console/sessions/${sessionId}/decide">
  <input name='${name}' value='"}'><button>Claim</button>
</form>`;
}

describe.skipIf(!hasChromium)('the operator console in Chromium', () => {
  let server: Awaited<ReturnType<typeof startServer>>;
  let attacker: Server;
  let attackerUrl: string;
  let browser: BrowserContext;
  let page: Page;
  let dir: string;
  let pages: string | undefined;
  /** Every request the example server answered: method, path, status. */
  const answered: string[] = [];

  const facts = async (sessionId: string): Promise<Fact[]> =>
    (await fetch(`${server.url}/sessions/${sessionId}/facts`)).json();

  /** Starts a run that parks at the saveNote ask; returns the pending call's id. */
  async function parkedRun(sessionId: string, text: string): Promise<string> {
    const response = await fetch(`${server.url}/sessions/${sessionId}/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ text }),
    });
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    let read = '';
    while (!read.includes('event: tool.permission.requested')) {
      const next = await reader.read();
      if (next.done) throw new Error('the run ended before its ask');
      read += new TextDecoder().decode(next.value);
    }
    await reader.cancel();
    const pending = await (await fetch(`${server.url}/sessions/${sessionId}/pending`)).json();
    return pending[0].callId;
  }

  beforeAll(async () => {
    vi.stubEnv('OPENAI_API_KEY', '');
    vi.stubEnv('GOOGLE_GENERATIVE_AI_API_KEY', '');
    vi.spyOn(console, 'log').mockImplementation(() => {});
    pages = await buildWebPages();
    dir = mkdtempSync(path.join(tmpdir(), 'turnlog-console-'));
    server = await startServer({ port: 0, dir, webDist: pages });
    server.http.on('request', (request, response) =>
      response.once('finish', () =>
        answered.push(`${request.method} ${request.url} ${response.statusCode}`),
      ),
    );
    // Three more sessions: one the operator approves, one waiting (the attacker's target), one stopped.
    await parkedRun('nightly-report', 'Remember that the demo is at 3pm');
    const targetCall = await parkedRun('door-code', 'Remember the door code 1234');
    await parkedRun('plants', 'Remember to water the plants');
    await fetch(`${server.url}/sessions/plants/stop`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    let html = '';
    attacker = createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      response.end(html);
    });
    await new Promise<void>((resolve) => attacker.listen(0, '127.0.0.1', resolve));
    const { port } = attacker.address() as { port: number };
    // localhost, not 127.0.0.1: another site than the server's (ports alone make the same site).
    attackerUrl = `http://localhost:${port}`;
    html = attackerPage(server.url, 'door-code', targetCall);
    browser = await launchChromium();
    page = browser.pages()[0] ?? (await browser.newPage());
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => attacker?.close(resolve));
    await server?.close();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    if (pages !== undefined) rmSync(pages, { recursive: true, force: true });
    vi.unstubAllEnvs();
    vi.restoreAllMocks();
  });

  const row = (sessionId: string) => page.locator(`tr[data-session="${sessionId}"]`);
  const count = (status: string) =>
    page.locator(`button.status-filter[data-status="${status}"] .count`).textContent();

  it('lists the sessions with counts, filters and searches them, and approves a live run to its end', async () => {
    await page.goto(`${server.url}/log`);
    await eventually(() => row('nightly-report').getAttribute('data-status')).toBe('awaiting');
    expect(await count('awaiting')).toBe('2');
    expect(await count('aborted')).toBe('1');
    expect(await count('completed')).toBe('0');
    expect(
      await page
        .locator('tr[data-session]')
        .evaluateAll((rows) => rows.map((element) => element.getAttribute('data-session'))),
    ).toEqual(['nightly-report', 'door-code', 'plants']);
    const pending = row('nightly-report').locator('.pending');
    expect(await pending.locator('code').textContent()).toBe('saveNote');
    expect(await row('plants').getByRole('button').allTextContents()).toEqual(['plants']);
    const shot = path.join(repoRoot, 'test-output', 'browser', 'console.png');
    mkdirSync(path.dirname(shot), { recursive: true });
    await page.locator('main').screenshot({ path: shot });
    if (process.env.TURNLOG_UPDATE_SCREENSHOTS === '1') {
      copyFileSync(shot, path.join(repoRoot, 'docs', 'console.png'));
    }

    // The status filter keeps the awaiting runs; the search finds one by its run id.
    await page.locator('button.status-filter[data-status="awaiting"]').click();
    await eventually(() => page.locator('tr[data-session]').count()).toBe(2);
    const [run] = (await facts('door-code')).map((fact) => fact.runId);
    await page.getByRole('textbox', { name: 'search' }).fill(run ?? '');
    await eventually(() =>
      page
        .locator('tr[data-session]')
        .evaluateAll((rows) => rows.map((element) => element.getAttribute('data-session'))),
    ).toEqual(['door-code']);
    expect(await row('door-code').locator('td').first().textContent()).toBe('door-code (run)');
    await page.getByRole('textbox', { name: 'search' }).fill('');
    await page.locator('button.status-filter[data-status="awaiting"]').click();

    // Approve from the console: the live run executes the note's tool and completes.
    await row('nightly-report').getByRole('button', { name: 'Approve' }).click();
    await eventually(() => row('nightly-report').getAttribute('data-status')).toBe('completed');
    await eventually(() => count('completed')).toBe('1');
    const log = await facts('nightly-report');
    expect(
      log.flatMap((fact) =>
        fact.type === 'tool.permission.decided' ? [[fact.decision, fact.reason]] : [],
      ),
    ).toEqual([['allow', 'decided from the console']]);
    expect(log.filter((fact) => fact.type === 'tool.started')).toHaveLength(1);
    expect(log.at(-1)).toMatchObject({ type: 'run.ended', status: 'completed' });
    expect(answered).toContain('POST /api/console/sessions/nightly-report/decide 200');

    // The session's name opens its timeline below the list, to its last fact.
    await row('nightly-report').getByRole('button', { name: 'nightly-report' }).click();
    await eventually(() =>
      page.getByRole('list', { name: 'timeline' }).locator('.type').last().textContent(),
    ).toBe('run.ended');
    expect(await page.getByRole('list', { name: 'timeline' }).locator('li').count()).toBe(
      log.length,
    );
    expect(new URL(page.url()).searchParams.get('session')).toBe('nightly-report');
  });

  it('refuses another site approving through the console, by form, no-cors or CORS fetch: nothing reaches the log', async () => {
    const before = await facts('door-code');
    await page.goto(`${attackerUrl}/`);
    const [response] = await Promise.all([
      page.waitForResponse((candidate) => candidate.url().endsWith('/decide')),
      page.getByRole('button', { name: 'Claim' }).click(),
    ]);
    expect(response.status()).toBe(403);
    expect(await response.json()).toMatchObject({
      error: 'HttpRefusedError',
      reason: 'cross-origin',
    });

    await page.goto(`${attackerUrl}/`);
    const outcomes = await page.evaluate(async (target) => {
      const stop = `${target}/api/console/sessions/door-code/stop`;
      const opaque = await fetch(stop, {
        method: 'POST',
        mode: 'no-cors',
        headers: { 'content-type': 'text/plain' },
        body: '{}',
      });
      // A JSON body needs a preflight the server never answers: the browser does not send it.
      const cors = await fetch(stop, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{}',
      }).then(
        () => 'sent',
        () => 'blocked',
      );
      const read = await fetch(`${target}/api/console/sessions`).then(
        () => 'read',
        () => 'blocked',
      );
      return [opaque.type, cors, read];
    }, server.url);
    expect(outcomes).toEqual(['opaque', 'blocked', 'blocked']);
    await eventually(() =>
      answered.filter((line) => line.startsWith('POST /api/console/sessions/door-code/')),
    ).toEqual([
      'POST /api/console/sessions/door-code/decide 403',
      'POST /api/console/sessions/door-code/stop 403',
    ]);
    expect(answered).toContain('GET /api/console/sessions 403');
    expect(await facts('door-code')).toEqual(before);
  });

  it('follows the store live: a decision made by another client shows without a reload', async () => {
    await page.goto(`${server.url}/log`);
    await eventually(() => row('door-code').getAttribute('data-status')).toBe('awaiting');
    const pending = await (await fetch(`${server.url}/sessions/door-code/pending`)).json();
    const decided = await fetch(`${server.url}/sessions/door-code/decisions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ callId: pending[0].callId, decision: 'deny' }),
    });
    expect(decided.status).toBe(200);
    await eventually(() => row('door-code').getAttribute('data-status')).toBe('completed');
    expect(await count('awaiting')).toBe('0');
    expect(await row('door-code').locator('.pending').count()).toBe(0);
  });
});
