import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { build } from 'esbuild';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chunkTypes, readResponseLikeUseChat } from '../adapters/ui/ui-stream-reader.ts';
import { repoRoot } from '../examples/example-process.ts';
import { hasChromium, launchChromium } from './chromium.ts';

/** Polls until the page shows it (the page, the server and the browser share 2 busy cores). */
const eventually = <T>(read: () => Promise<T> | T) => expect.poll(read, { timeout: 20_000 });

const shots = path.join(repoRoot, 'test-output', 'browser');

/** A 1×1 PNG. */
const pixel = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
  'base64',
);

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** The chat server (test/browser/chat-server.ts) as a child process; resolves once it listens. */
async function startChatServer(env: Record<string, string>): Promise<ChildProcess> {
  const child = spawn(process.execPath, [path.join(repoRoot, 'test/browser/chat-server.ts')], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  await new Promise<void>((resolve, reject) => {
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      output += chunk;
      if (output.includes('listening on')) resolve();
    });
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      output += chunk;
    });
    child.once('exit', (code) => reject(new Error(`chat server exited (${code}): ${output}`)));
  });
  return child;
}

describe.skipIf(!hasChromium)('chatHandler behind useChat in Chromium', () => {
  let dir: string;
  let env: Record<string, string>;
  let url: string;
  let server: ChildProcess;
  let browser: BrowserContext;
  let page: Page;

  const tool = (name: string) => page.locator(`section.tool[data-tool="${name}"]`).last();
  const send = async (text: string) => {
    await page.getByRole('textbox', { name: 'message' }).fill(text);
    await page.getByRole('button', { name: 'Send' }).click();
  };
  const texts = (role: 'user' | 'assistant') =>
    page.locator(`article.message.${role} p.text`).allTextContents();
  const open = async (session: string, api = '/api/chat') => {
    await page.goto(`${url}/?session=${session}&api=${api}`);
    await page.getByRole('textbox', { name: 'message' }).waitFor();
  };
  const messagesOf = async (session: string) =>
    (await fetch(`${url}/api/chat/${session}/messages`)).json() as Promise<
      { role: string; metadata?: { status: string } }[]
    >;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'turnlog-chat-browser-'));
    mkdirSync(shots, { recursive: true });
    await build({
      entryPoints: [path.join(repoRoot, 'test/browser/chat-page.tsx')],
      outfile: path.join(dir, 'page.js'),
      bundle: true,
      format: 'esm',
      jsx: 'automatic',
      define: { 'process.env.NODE_ENV': '"production"' },
      logLevel: 'error',
    });
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    env = { DIR: path.join(dir, 'log'), PAGE: path.join(dir, 'page.js'), PORT: String(port) };
    server = await startChatServer(env);
    browser = await launchChromium();
    page = browser.pages()[0] ?? (await browser.newPage());
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    server?.kill('SIGKILL');
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it('streams an allowed tool as input-available then output, with no approval', async () => {
    await open('allowed');
    await send('What is the weather in Paris?');
    await page.getByText('It is sunny in Paris.').waitFor();
    expect(await tool('lookUp').getAttribute('data-state')).toBe('output-available');
    expect(await tool('lookUp').locator('.output').textContent()).toBe('"Paris: sunny, 21 °C"');
    expect(await page.getByRole('button', { name: 'Approve' }).count()).toBe(0);
    expect(await texts('assistant')).toEqual(['Let me look.', 'It is sunny in Paris.']);
  });

  it('asks, and goes on when approved; records a denial', async () => {
    await open('approve');
    await send('Remember milk');
    await tool('saveNote').getByRole('button', { name: 'Approve' }).click();
    await page.getByText('Saved the note.').waitFor();
    expect(await tool('saveNote').getAttribute('data-state')).toBe('output-available');

    await open('deny');
    await send('Remember eggs');
    await tool('saveNote').getByRole('button', { name: 'Deny' }).click();
    await page.getByText('Understood, not saved.').waitFor();
    expect(await tool('saveNote').getAttribute('data-state')).toBe('output-denied');
    await page.locator('main').screenshot({ path: path.join(shots, 'chat-handler-deny.png') });
  });

  it('refuses a message while a decision is pending, shows why, and loses nothing on reload', async () => {
    await open('pending');
    await send('Remember bread');
    await tool('saveNote').getByRole('button', { name: 'Approve' }).waitFor();
    await send('Hurry up');
    await eventually(() => page.getByRole('alert').textContent()).toContain(
      'This message was not sent',
    );
    // The log never had the refused message: a reload shows the run waiting, as it is.
    await page.reload();
    await tool('saveNote').getByRole('button', { name: 'Approve' }).waitFor();
    expect(await texts('user')).toEqual(['Remember bread']);
    await tool('saveNote').getByRole('button', { name: 'Approve' }).click();
    await page.getByText('Saved the note.').waitFor();
  });

  it('stops the run, not only the stream', async () => {
    await open('stop');
    await send('Tell me a story');
    await page.getByText('Once upon a time, there was a log').waitFor();
    await page.getByRole('button', { name: 'Stop' }).click();
    await eventually(async () => (await messagesOf('stop')).at(-1)?.metadata?.status).toBe(
      'aborted',
    );
    // The text of the step the stop cut is not in the log: the page removes it too.
    await eventually(() => texts('assistant')).toEqual([]);
    await eventually(() => page.getByRole('status').textContent()).toBe('ready');
  });

  it('regenerates the last answer, and shows the question once after a reload', async () => {
    await open('regenerate');
    await send('Hi');
    const first = await page.locator('article.message.assistant p.text').last().textContent();
    expect(first).toMatch(/^Answer number \d+\.$/);
    await page.getByRole('button', { name: 'Regenerate' }).click();
    await eventually(async () =>
      (await page.locator('article.message.assistant p.text').allTextContents()).join('|'),
    ).toMatch(/^Answer number \d+\.$/);
    const second = await page.locator('article.message.assistant p.text').last().textContent();
    expect(second).not.toBe(first);
    await page.reload();
    await page.getByText(second as string).waitFor();
    expect(await texts('user')).toEqual(['Hi']);
    expect(await texts('assistant')).toEqual([second]);
  });

  it('sends an image the user attached to the model, and shows it after a reload', async () => {
    await open('image');
    await page
      .getByLabel('attach')
      .setInputFiles({ name: 'pixel.png', mimeType: 'image/png', buffer: pixel });
    await send('What is this?');
    await page.getByText('I see 1 image (image/png).').waitFor();
    await page.reload();
    await page.getByText('I see 1 image (image/png).').waitFor();
    expect(await page.locator('article.message.user img.file').getAttribute('src')).toBe(
      `data:image/png;base64,${pixel.toString('base64')}`,
    );
  });

  it('resumes after the server is SIGKILLed mid-tool: the call may have run, and never runs again', async () => {
    await open('killed');
    await send('Back up everything');
    await eventually(() => tool('backUp').getAttribute('data-state')).toBe('input-available');
    const backups = path.join(env.DIR as string, 'backups.log');
    await eventually(() => readFileSync(backups, 'utf8').split('\n').filter(Boolean).length).toBe(
      1,
    );
    server.kill('SIGKILL');
    await new Promise((resolve) => server.once('exit', resolve));
    server = await startChatServer(env);
    // The page reconnects by itself (resumeStream): the call is marked, in standard terms.
    await tool('backUp').getByRole('button', { name: 'Approve' }).waitFor({ timeout: 30_000 });
    expect(await tool('backUp').locator('.title').textContent()).toBe(
      'May have run: it started before a restart and never finished',
    );
    expect(await tool('backUp').locator('.reason').textContent()).toContain(
      'may or may not have run',
    );
    await page.locator('main').screenshot({ path: path.join(shots, 'chat-handler-killed.png') });
    await tool('backUp').getByRole('button', { name: 'Approve' }).click();
    await page.getByText('I cannot tell whether the backup ran').waitFor();
    expect(readFileSync(backups, 'utf8').split('\n').filter(Boolean)).toHaveLength(1);
  });

  it("runs the same flow against the AI SDK's own streamText route", async () => {
    await open('sdk', '/sdk/api/chat');
    await send('What is the weather in Paris?');
    await page.getByText('It is sunny in Paris.').waitFor();
    expect(await tool('lookUp').getAttribute('data-state')).toBe('output-available');
    await send('Remember milk');
    await tool('saveNote').getByRole('button', { name: 'Approve' }).click();
    await page.getByText('Saved the note.').waitFor();
    await send('Remember eggs');
    await tool('saveNote').getByRole('button', { name: 'Deny' }).click();
    await page.getByText('Understood, not saved.').waitFor();
    expect(await tool('saveNote').getAttribute('data-state')).toBe('output-denied');
  });

  it('sends the chunks streamText sends for an allowed tool, but for the metadata and where the step ends', async () => {
    const ask = (api: string, id: string) =>
      fetch(`${url}${api}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          id,
          trigger: 'submit-message',
          messages: [{ id: 'u1', role: 'user', parts: [{ type: 'text', text: 'Weather?' }] }],
        }),
      }).then((response) => readResponseLikeUseChat(response));
    const ours = chunkTypes((await ask('/api/chat', 'chunks')).chunks);
    const theirs = chunkTypes((await ask('/sdk/api/chat', 'chunks')).chunks);
    expect(theirs).toEqual([
      'start',
      'start-step',
      'text-start',
      'text-delta',
      'text-end',
      'tool-input-start',
      'tool-input-delta',
      'tool-input-available',
      'tool-output-available',
      'finish-step',
      'start-step',
      'text-start',
      'text-delta',
      'text-end',
      'finish-step',
      'finish',
    ]);
    // The same parts, with turnlog's message-metadata after each fact (where the log stands),
    // and the first step ending before its tool's output: turnlog runs a tool only once the
    // step's response is in the log (I2, I5), streamText inside the step
    // (architecture/chat.md, "The chunks against streamText's").
    expect(ours.filter((type) => type !== 'message-metadata')).toEqual([
      ...theirs.slice(0, 8),
      'finish-step',
      'tool-output-available',
      ...theirs.slice(10),
    ]);
    // One per fact: run.started, step.started, step.completed, tool.permission.decided,
    // tool.started, tool.settled, step.started, step.completed, run.ended.
    expect(ours.filter((type) => type === 'message-metadata')).toHaveLength(9);
  });
});
