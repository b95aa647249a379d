import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createAnthropic } from '@ai-sdk/anthropic';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Fact, NewFact } from '../../events/facts.ts';
import { lowdbStore } from '../../store/folder/lowdb-store.ts';
import { memoryStore } from '../../store/memory/memory-store.ts';
import { loadSampleLog } from '../events/sample-logs.ts';
import { type ExampleProcess, repoRoot, startExample } from '../examples/example-process.ts';
import { createFakeFetch, loadFixture, sse } from '../helpers/fake-fetch.ts';
import { testRuntime } from '../runtime/runtime-helpers.ts';
import { hasChromium, launchChromium } from './chromium.ts';
import { buildWebPages } from './web-pages.ts';

/** Polls until the page shows it (the page, the server and the browser share 2 busy cores). */
const eventually = <T>(read: () => Promise<T> | T) => expect.poll(read, { timeout: 20_000 });

/** Where the screenshots go (ignored by git). */
const shots = path.join(repoRoot, 'test-output', 'browser');

/** The embedded server as a program (so it can be killed), on a fixed port and log. */
function startServerProcess(port: number, dir: string, pages: string): ExampleProcess {
  // NOTES_BACKUP_MS: long enough that a kill lands while the backup runs.
  const env = {
    PORT: String(port),
    TURNLOG_DIR: dir,
    TURNLOG_WEB_DIST: pages,
    NOTES_BACKUP_MS: '600000',
  };
  return startExample('embedded-server', { env, outlivesTest: true });
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** A finished run with one call settled twice (I6 broken): damage the viewer must show. */
async function seedDamagedLog(dir: string) {
  const store = lowdbStore({ dir });
  const facts = loadSampleLog('stop').map(({ seq: _, ...fact }) => ({
    ...fact,
    sessionId: 'damaged-log',
  }));
  const settled = facts.find((fact) => fact.type === 'tool.settled') as Fact;
  const withDuplicate = [
    ...facts.slice(0, -1),
    { ...settled, id: `${settled.id}-again` },
    facts.at(-1),
  ];
  await store.append('damaged-log', withDuplicate as NewFact[]);
  await store.close();
}

/** A run of Anthropic's recorded web search (a provider-executed tool), as session `web-search`. */
async function seedProviderToolLog(dir: string) {
  const fake = createFakeFetch(() => sse(loadFixture('anthropic-web-search-tool')));
  const anthropic = createAnthropic({ apiKey: 'test', fetch: fake.fetch });
  const runtime = testRuntime(memoryStore(), {
    model: anthropic('claude-sonnet-4-5'),
    tools: { webSearch: anthropic.tools.webSearch_20250305() },
  });
  await (await runtime.send({ sessionId: 'web-search', text: 'What is in the news?' })).done;
  const facts = (await runtime.facts('web-search')).map(({ seq: _, ...fact }) => fact);
  await runtime.close();
  const store = lowdbStore({ dir });
  await store.append('web-search', facts as NewFact[]);
  await store.close();
}

describe.skipIf(!hasChromium)('the web example in Chromium', () => {
  let dir: string;
  let pages: string | undefined;
  let port: number;
  let url: string;
  let server: ExampleProcess;
  let browser: BrowserContext;
  let page: Page;

  const facts = async (session: string): Promise<Fact[]> =>
    (await fetch(`${url}/sessions/${session}/facts`)).json();
  const tool = (name: string) => page.locator(`section.tool[data-tool="${name}"]`).last();
  const status = () => page.getByRole('status');

  beforeAll(async () => {
    pages = await buildWebPages();
    mkdirSync(shots, { recursive: true });
    dir = mkdtempSync(path.join(tmpdir(), 'turnlog-web-'));
    await seedDamagedLog(path.join(dir, 'embedded-server'));
    await seedProviderToolLog(path.join(dir, 'embedded-server'));
    port = await freePort();
    url = `http://127.0.0.1:${port}`;
    server = startServerProcess(port, dir, pages as string);
    await server.next('listening on');
    browser = await launchChromium();
    page = browser.pages()[0] ?? (await browser.newPage());
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    server?.child.kill('SIGKILL');
    await server?.exited;
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    if (pages !== undefined) rmSync(pages, { recursive: true, force: true });
  });

  it('chats with useChat: streamed text, an ask allowed, one denied, one stopped', async () => {
    await page.goto(`${url}/?session=web-chat`);
    await page.getByRole('textbox', { name: 'message' }).fill('Remember that the demo is at 3pm');
    await page.getByRole('button', { name: 'Send' }).click();
    await eventually(() => page.locator('.message.assistant .text').first().textContent()).toBe(
      'I will save that as a note.',
    );
    await tool('saveNote').getByRole('button', { name: 'Allow' }).waitFor();
    expect(await tool('saveNote').getAttribute('data-state')).toBe('approval-requested');
    await eventually(() => status().textContent()).toBe('Waiting for your decision.');
    await page.locator('main').screenshot({ path: path.join(shots, 'chat-ask.png') });

    await tool('saveNote').getByRole('button', { name: 'Allow' }).click();
    await page.getByText('Done. Saved the note "the demo is at 3pm".').waitFor();
    expect(await tool('saveNote').getAttribute('data-state')).toBe('output-available');
    expect(await tool('saveNote').locator('.output').textContent()).toBe(
      'Saved the note "the demo is at 3pm".',
    );
    await eventually(() => status().textContent()).toBe('Done.');
    await page.locator('main').screenshot({ path: path.join(shots, 'chat-allowed.png') });

    await page.getByRole('textbox', { name: 'message' }).fill('Remember the door code 1234');
    await page.getByRole('button', { name: 'Send' }).click();
    await tool('saveNote').getByRole('button', { name: 'Deny' }).click();
    await page.getByText('All right, I did not save it.').waitFor();
    expect(await tool('saveNote').getAttribute('data-state')).toBe('output-denied');

    await page.getByRole('textbox', { name: 'message' }).fill('Remember to water the plants');
    await page.getByRole('button', { name: 'Send' }).click();
    await tool('saveNote').getByRole('button', { name: 'Allow' }).waitFor();
    await page.getByRole('button', { name: 'Stop' }).click();
    await eventually(() => status().textContent()).toBe('Stopped (stop_requested).');
    expect(await tool('saveNote').getAttribute('data-state')).toBe('output-denied');

    const log = await facts('web-chat');
    expect(
      log
        .filter((fact) => fact.type === 'run.ended')
        .map((fact) => fact.type === 'run.ended' && fact.status),
    ).toEqual(['completed', 'completed', 'aborted']);
    expect(
      log.flatMap((fact) =>
        fact.type === 'tool.permission.decided' ? [[fact.decision, fact.by]] : [],
      ),
    ).toEqual([
      ['allow', 'user'],
      ['deny', 'user'],
    ]);
    expect(log.filter((fact) => fact.type === 'tool.started')).toHaveLength(1);

    // A reload shows the same conversation, rebuilt from the log.
    await page.reload();
    await page.getByText('All right, I did not save it.').waitFor();
    expect(await page.locator('.message.user').allTextContents()).toEqual([
      'Remember that the demo is at 3pm',
      'Remember the door code 1234',
      'Remember to water the plants',
    ]);
    expect(
      await page
        .locator('section.tool')
        .evaluateAll((parts) => parts.map((part) => part.getAttribute('data-state'))),
    ).toEqual(['output-available', 'output-denied', 'output-denied']);
  });

  it('follows a decision made on another tab as it happens', async () => {
    const done = 'Done. Saved the note "the demo is at 3pm".';
    await page.goto(`${url}/?session=web-two-tabs`);
    await page.getByRole('textbox', { name: 'message' }).fill('Remember that the demo is at 3pm');
    await page.getByRole('button', { name: 'Send' }).click();
    await tool('saveNote').getByRole('button', { name: 'Allow' }).waitFor();
    await eventually(() => status().textContent()).toBe('Waiting for your decision.');

    const other = await browser.newPage();
    try {
      await other.goto(`${url}/?session=web-two-tabs`);
      const otherTool = other.locator('section.tool[data-tool="saveNote"]').last();
      await otherTool.getByRole('button', { name: 'Allow' }).click();
      await other.getByText(done).waitFor();
      // The first tab, never clicked, followed the run to its end.
      await page.getByText(done).waitFor();
      expect(await tool('saveNote').getAttribute('data-state')).toBe('output-available');
      expect(await tool('saveNote').locator('.output').textContent()).toBe(
        'Saved the note "the demo is at 3pm".',
      );
      await eventually(() => status().textContent()).toBe('Done.');
    } finally {
      await other.close();
    }
    const log = await facts('web-two-tabs');
    expect(log.filter((fact) => fact.type === 'tool.permission.decided')).toHaveLength(1);
    expect(log.filter((fact) => fact.type === 'tool.started')).toHaveLength(1);
  });

  it('resumes from the log when the server is killed while a tool runs and started again', async () => {
    await page.goto(`${url}/?session=web-restart`);
    await page.getByRole('textbox', { name: 'message' }).fill('Please back up my notes');
    await page.getByRole('button', { name: 'Send' }).click();
    // Printed by the tool once tool.started is durable.
    await server.next('backing up');
    await page.getByText('Backing up your notes.').waitFor();
    // Allowed by the tool's own permission, with no policy set: never "by the policy".
    expect(await tool('backUpNotes').locator('header').textContent()).not.toContain('policy');

    server.child.kill('SIGKILL');
    await server.exited;
    await eventually(() => status().textContent()).toBe('Reconnecting to the server…');

    server = startServerProcess(port, dir, pages as string);
    await server.next('listening on');
    expect(server.stdout()).toContain(
      'recovered web-restart: parked (interrupted in settlingTools.running)',
    );
    // The page reconnects by itself: the run rebuilt from the log, waiting for a person.
    await tool('backUpNotes').getByRole('button', { name: 'Report unknown' }).waitFor();
    expect(await tool('backUpNotes').getByRole('button', { name: 'Abort' }).count()).toBe(1);
    await page.locator('main').screenshot({ path: path.join(shots, 'chat-indeterminate.png') });

    await tool('backUpNotes').getByRole('button', { name: 'Report unknown' }).click();
    await page
      .getByText("I can't tell whether the backup finished; ask me to back up again to be sure.")
      .waitFor();
    expect(await tool('backUpNotes').getAttribute('data-state')).toBe('output-error');
    expect(await tool('backUpNotes').locator('.error').textContent()).toBe(
      'The outcome of this call is unknown: it may or may not have run. Inspect the current state before retrying.',
    );
    const log = await facts('web-restart');
    expect(log.map((fact) => fact.type)).toEqual([
      'run.started',
      'step.started',
      'step.completed',
      'tool.permission.decided',
      'tool.started',
      'tool.indeterminate',
      'run.recovered',
      'tool.permission.decided',
      'tool.settled',
      'step.started',
      'step.completed',
      'run.ended',
    ]);
    expect(log[8]).toMatchObject({ outcome: 'unknown' });
  });

  it('scrubs the log viewer to a seq: the state on the chart, the read model, the messages sent', async () => {
    const log = await facts('web-chat');
    const ask = log.find((fact) => fact.type === 'tool.permission.requested') as Fact;
    const secondRequest = log.filter((fact) => fact.type === 'step.started')[1] as Fact;
    await page.goto(`${url}/log?session=web-chat`);
    await page
      .getByTestId('selected-seq')
      .getByText(`seq ${log.length} of ${log.length}`)
      .waitFor();
    expect(await page.locator('.timeline li').count()).toBe(log.length);
    // The selected (last) fact is on screen when the viewer opens, inside the timeline's view.
    const selected = await page.locator('.timeline button.selected').boundingBox();
    const list = await page.locator('.timeline').boundingBox();
    expect(selected !== null && list !== null).toBe(true);
    if (selected !== null && list !== null) {
      expect(selected.y).toBeGreaterThanOrEqual(list.y);
      expect(selected.y + selected.height).toBeLessThanOrEqual(list.y + list.height);
      expect(selected.y + selected.height).toBeLessThanOrEqual(page.viewportSize()?.height ?? 0);
    }

    const slider = page.getByRole('slider', { name: 'seq' });
    await slider.focus();
    await page.keyboard.press('Home');
    for (let seq = 1; seq < ask.seq; seq += 1) await page.keyboard.press('ArrowRight');
    await page.getByTestId('selected-seq').getByText(`seq ${ask.seq} of`).waitFor();
    await eventually(() => page.getByTestId('machine-state').textContent()).toBe(
      'awaitingPermission',
    );
    expect(
      await page
        .locator('svg g.state.active')
        .evaluateAll((boxes) => boxes.map((box) => box.getAttribute('data-state'))),
    ).toEqual(['awaitingPermission']);
    expect(await page.getByTestId('run-status').textContent()).toBe('awaiting');
    expect(await page.locator('tr[data-call="call_2"] td').allTextContents()).toEqual([
      'saveNote {"title":"the demo is at 3pm","text":"the demo is at 3pm"}',
      'raw-bytes',
      'pending',
      'no',
      '—',
    ]);
    expect(await page.getByTestId('request-messages').locator('li').allTextContents()).toEqual([
      'user Remember that the demo is at 3pm',
      'assistant I will save that as a note.',
    ]);

    await page.locator(`.timeline button[data-seq="${secondRequest.seq}"]`).click();
    await eventually(() => page.getByTestId('machine-state').textContent()).toBe(
      'requesting.streaming',
    );
    expect(await page.locator('section[aria-label="request"] h2').textContent()).toMatch(
      /^Sent by step_\w+ \(attempt 1\) to scripted$/,
    );
    expect(await page.getByTestId('request-messages').locator('li').allTextContents()).toEqual([
      'user Remember that the demo is at 3pm',
      'assistant I will save that as a note. → saveNote({"title":"the demo is at 3pm","text":"the demo is at 3pm"})',
      'tool ← saveNote: Saved the note "the demo is at 3pm".',
    ]);
    expect(await page.locator('section[aria-label="request"] p').first().textContent()).toBe(
      '3 message(s); step.started recorded 3',
    );
    expect(await page.locator('tr[data-call="call_2"] td').allTextContents()).toEqual([
      'saveNote {"title":"the demo is at 3pm","text":"the demo is at 3pm"}',
      'raw-bytes',
      'allow by user',
      'yes',
      'success: Saved the note "the demo is at 3pm".',
    ]);
    await page.screenshot({
      path: path.join(shots, 'log-viewer.png'),
      clip: { x: 0, y: 0, width: 1100, height: 760 },
    });
  });

  it('follows a live run in the viewer, offline, from its ask to its end', async () => {
    const session = 'web-live';
    const post = (route: string, body: object) =>
      fetch(`${url}/sessions/${session}/${route}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const stream = await post('messages', { text: 'Remember that the review is at 5pm' });
    await page.goto(`${url}/log?session=${session}`);
    await page.getByTestId('following').waitFor();
    await eventually(() => page.getByTestId('machine-state').textContent()).toBe(
      'awaitingPermission',
    );
    const [pending] = (await (await fetch(`${url}/sessions/${session}/pending`)).json()) as {
      callId: string;
    }[];
    expect((await post('decisions', { callId: pending?.callId, decision: 'allow' })).status).toBe(
      200,
    );
    await stream.body?.cancel();
    // The page reads the log again by itself: the selection moves on to the run's last fact.
    await eventually(() => page.getByTestId('machine-state').textContent()).toBe('terminal');
    const log = await facts(session);
    expect(log.at(-1)?.type).toBe('run.ended');
    await eventually(() => page.getByTestId('selected-seq').textContent()).toBe(
      `seq ${log.length} of ${log.length}`,
    );
    await eventually(() => page.getByTestId('following').count()).toBe(0);
  });

  it('shows a recovered run and a damaged log with their findings', async () => {
    await page.goto(`${url}/log?session=web-restart`);
    await page
      .getByText(
        /^Recovered at start: run run_\w+ was interrupted in settlingTools\.running; it was parked, and has since ended completed \(seq 12\)\. Indeterminate: call_2\.$/,
      )
      .waitFor();
    const restart = await facts('web-restart');
    const indeterminate = restart.find((fact) => fact.type === 'tool.indeterminate') as Fact;
    await page.locator(`.timeline button[data-seq="${indeterminate.seq}"]`).click();
    await eventually(() => page.locator('tr[data-call="call_2"] td').nth(3).textContent()).toBe(
      'started, indeterminate',
    );
    expect(await page.getByTestId('machine-state').textContent()).toBe('settlingTools.running');

    await page.goto(`${url}/log?session=damaged-log`);
    const finding = page.locator('.findings p.error');
    await finding.first().waitFor();
    expect(await finding.allTextContents()).toEqual([
      expect.stringMatching(
        /^Damage \(duplicate-tool-settled, seq 7, 8\): run \w+ step \w+ call \w+ has 2 tool\.settled facts \(seq 7, 8\); I6 allows one$/,
      ),
    ]);
    expect(
      await page
        .locator('.timeline button.damaged')
        .evaluateAll((rows) => rows.map((row) => row.getAttribute('data-seq'))),
    ).toEqual(['7', '8']);
    await page.screenshot({ path: path.join(shots, 'log-damaged.png'), fullPage: true });
  });

  it("shows a provider's web search as run by the provider, in the chat and the viewer", async () => {
    await page.goto(`${url}/?session=web-search`);
    const search = tool('webSearch');
    await eventually(() => search.getAttribute('data-state')).toBe('output-available');
    expect(await search.getAttribute('data-provider-executed')).toBe('true');
    expect(await search.locator('header').textContent()).toBe('webSearch done run by the provider');
    expect(await search.locator('pre.input').textContent()).toBe(
      '{"query":"tech news today September 26 2025"}',
    );
    await page.screenshot({ path: path.join(shots, 'chat-web-search.png'), fullPage: true });

    await page.goto(`${url}/log?session=web-search`);
    const row = page.locator('tr[data-provider-call="srvtoolu_01Bj5uzzLcYG5hfueSLcDH8k"] td');
    await eventually(() => row.count()).toBe(2);
    expect(await row.first().textContent()).toBe(
      'webSearch {"query":"tech news today September 26 2025"}',
    );
    expect(await row.nth(1).textContent()).toMatch(/^success: \[\{"url":"https:/);
    // No call of turnlog's: nothing proved, asked about, started or settled.
    expect(await page.locator('tr[data-call]').count()).toBe(0);
    // The next request replays the search to the same provider.
    expect(await page.getByTestId('request-messages').locator('li').nth(1).textContent()).toMatch(
      /^assistant → webSearch\(\{"query":"tech news today September 26 2025"\}\) run by the provider ← webSearch, run by the provider: \[/,
    );
  });
});
