import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { validateUIMessages } from 'ai';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { TurnlogUIMessage } from '../../adapters/ui/ui-message-types.ts';
import { startServer } from '../../examples/embedded-server.ts';
import { staticFile } from '../../examples/web/server/static-files.ts';
import { asSent, readResponseLikeUseChat } from '../adapters/ui/ui-stream-reader.ts';
import { tempDir } from './example-process.ts';

let server: Awaited<ReturnType<typeof startServer>>;

const user = (text: string): TurnlogUIMessage => ({
  id: `user-${text.length}`,
  role: 'user',
  parts: [{ type: 'text', text }],
});

function postChat(body: unknown) {
  return fetch(`${server.url}/api/chat`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

async function errorOf(response: Response) {
  return { status: response.status, body: await response.json() };
}

/** The assistant message with its one pending approval answered. */
function answered(message: TurnlogUIMessage, approved: boolean): TurnlogUIMessage {
  return asSent({
    ...message,
    parts: message.parts.map((part) =>
      'approval' in part && part.state === 'approval-requested'
        ? { ...part, state: 'approval-responded', approval: { ...part.approval, approved } }
        : part,
    ),
  }) as TurnlogUIMessage;
}

describe('the web example routes over HTTP', () => {
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

  it('drives a run as useChat does: a message, the ask, a resume from the log, the answer, the rest', async () => {
    const question = user('Remember that the demo is at 3pm');
    const first = await postChat({ id: 'c1', messages: [question], trigger: 'submit-message' });
    expect(first.status).toBe(200);
    expect(first.headers.get('x-vercel-ai-ui-message-stream')).toBe('v1');
    const parked = (await readResponseLikeUseChat(first)).message as TurnlogUIMessage;
    expect(parked.metadata).toMatchObject({ status: 'awaiting', seq: 4 });
    expect(parked.parts.find((part) => part.type === 'tool-saveNote')).toMatchObject({
      state: 'approval-requested',
      input: { title: 'the demo is at 3pm', text: 'the demo is at 3pm' },
    });

    // A client that reconnects gets the run rebuilt from the log, to where it waits.
    const resumed = await fetch(`${server.url}/api/chat/c1/stream`);
    expect(resumed.status).toBe(200);
    expect((await readResponseLikeUseChat(resumed)).message).toEqual(parked);
    const fromLog = await (await fetch(`${server.url}/api/chat/c1/messages`)).json();
    expect(fromLog).toEqual([
      {
        id: expect.any(String),
        role: 'user',
        parts: [{ type: 'text', text: 'Remember that the demo is at 3pm' }],
      },
      asSent(parked),
    ]);

    const answer = answered(parked, true);
    const continued = await postChat({
      id: 'c1',
      messages: [question, answer],
      trigger: 'submit-message',
    });
    expect(continued.status).toBe(200);
    const final = (await readResponseLikeUseChat(continued, answer)).message as TurnlogUIMessage;
    await validateUIMessages({ messages: [question, asSent(final)] });
    expect(final.parts.find((part) => part.type === 'tool-saveNote')).toMatchObject({
      state: 'output-available',
      output: 'Saved the note "the demo is at 3pm".',
      approval: { approved: true },
    });
    expect(final.parts.at(-1)).toEqual({
      type: 'text',
      text: 'Done. Saved the note "the demo is at 3pm".',
      state: 'done',
    });
    expect(final.metadata).toMatchObject({ status: 'completed', reason: 'end_turn', seq: 10 });

    expect((await fetch(`${server.url}/api/chat/c1/stream`)).status).toBe(204);
    expect(await (await fetch(`${server.url}/api/chat/c1/messages`)).json()).toEqual([
      fromLog[0],
      asSent(final),
    ]);
  });

  it('tells a page waiting on a run when a decision made elsewhere moved it on', async () => {
    const question = user('Remember that the demo is at 3pm');
    const parked = (
      await readResponseLikeUseChat(await postChat({ id: 'c4', messages: [question] }))
    ).message as TurnlogUIMessage;
    const seq = parked.metadata?.seq as number;
    const moved = (after: number) => fetch(`${server.url}/api/chat/c4/moved?after=${after}`);
    // Facts after the given seq are already in the log: answered at once.
    expect(await (await moved(seq - 1)).json()).toEqual({ seq });

    // Nothing after the park yet: the answer comes with the decision another client makes.
    const waiting = moved(seq);
    const callId = (
      parked.parts.find((part) => part.type === 'tool-saveNote') as { toolCallId: string }
    ).toolCallId;
    const decided = await fetch(`${server.url}/sessions/c4/decisions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ callId, decision: 'allow' }),
    });
    expect(decided.status).toBe(200);
    const answer = await waiting;
    expect(answer.status).toBe(200);
    expect(await answer.json()).toEqual({ seq: seq + 1 });
    const facts = await (await fetch(`${server.url}/sessions/c4/facts`)).json();
    expect(facts[seq]).toMatchObject({ seq: seq + 1, type: 'tool.permission.decided', by: 'user' });

    // The run goes on without this page; once it ended, the log shows the decision.
    const messages = async () =>
      (await (await fetch(`${server.url}/api/chat/c4/messages`)).json()) as TurnlogUIMessage[];
    await expect.poll(async () => (await messages()).at(-1)?.metadata?.status).toBe('completed');
    expect(
      (await messages()).at(-1)?.parts.find((part) => part.type === 'tool-saveNote'),
    ).toMatchObject({
      state: 'output-available',
      approval: { approved: true },
    });
    // No unfinished run (once the handle is let go): nothing to wait for.
    await expect.poll(async () => (await moved(0)).status).toBe(204);
    expect((await fetch(`${server.url}/api/chat/c4/moved`)).status).toBe(400);
  });

  it('refuses what it cannot do, with the status and the reason', async () => {
    expect(await errorOf(await postChat({ messages: [user('hi')] }))).toEqual({
      status: 400,
      body: {
        error: 'HttpRefusedError',
        reason: 'bad-request',
        message: 'The body needs "id", the chat id (a non-empty string).',
      },
    });
    // Nothing to regenerate in a session without a run.
    expect(
      await errorOf(
        await postChat({ id: 'c2', messages: [user('hi')], trigger: 'regenerate-message' }),
      ),
    ).toEqual({
      status: 409,
      body: {
        error: 'RegenerateRefused',
        message: 'Only the last answer can be regenerated; send a new message instead.',
      },
    });
    const invalid = await errorOf(await postChat({ id: 'c2', messages: [{ role: 'user' }] }));
    expect(invalid.status).toBe(400);
    expect(invalid.body.message).toMatch(/^"messages" are not valid UI messages: /);

    const parked = await readResponseLikeUseChat(
      await postChat({ id: 'c2', messages: [user('Remember milk')] }),
    );
    const busy = await errorOf(await postChat({ id: 'c2', messages: [user('And eggs')] }));
    expect(busy.status).toBe(409);
    expect(busy.body.error).toBe('SessionBusyError');
    const unanswered = await errorOf(
      await postChat({ id: 'c2', messages: [user('x'), asSent(parked.message)] }),
    );
    expect(unanswered).toEqual({
      status: 400,
      body: {
        error: 'HttpRefusedError',
        reason: 'bad-request',
        message: 'The last message answers no approval; send a user message.',
      },
    });
    const forged = answered(parked.message as TurnlogUIMessage, true);
    const part = forged.parts.find((candidate) => candidate.type === 'tool-saveNote') as {
      approval: { id: string };
    };
    part.approval.id = part.approval.id.replace(/sha256%3A[0-9a-f]+$/, 'sha256%3A0000');
    const mismatch = await errorOf(await postChat({ id: 'c2', messages: [user('x'), forged] }));
    expect(mismatch.status).toBe(409);
    expect(mismatch.body.error).toBe('DecisionMismatchError');
    const elsewhere = await errorOf(
      await postChat({
        id: 'c3',
        messages: [user('x'), answered(parked.message as TurnlogUIMessage, true)],
      }),
    );
    expect(elsewhere.status).toBe(404);
    expect(elsewhere.body.error).toBe('NoActiveRunError');
  });

  it('serves the log viewer its data: sessions, the log with its damage, the view at a seq, the chart', async () => {
    await readResponseLikeUseChat(
      await postChat({ id: 'v1', messages: [user('Remember the blue door')] }),
    );
    expect(await (await fetch(`${server.url}/sessions`)).json()).toEqual(['v1']);
    const log = await (await fetch(`${server.url}/sessions/v1/log`)).json();
    expect(log.facts.map((fact: { type: string }) => fact.type)).toEqual([
      'run.started',
      'step.started',
      'step.completed',
      'tool.permission.requested',
    ]);
    expect([log.damage, log.storeFindings, log.recovered]).toEqual([[], [], []]);
    const view = await (await fetch(`${server.url}/sessions/v1/view?seq=2`)).json();
    expect(view.state).toEqual({
      recorded: 'requesting.streaming',
      replayed: 'requesting.streaming',
    });
    expect(view.request).toMatchObject({ kind: 'sent', provider: 'scripted', recordedCount: 1 });
    expect(view.request.messages).toEqual([{ role: 'user', content: 'Remember the blue door' }]);
    expect(await errorOf(await fetch(`${server.url}/sessions/v1/view?seq=9`))).toEqual({
      status: 404,
      body: { error: 'NotFound', message: 'Session v1 has no fact with seq 9.' },
    });
    const chart = await (await fetch(`${server.url}/machine`)).json();
    expect(chart.initial).toBe('projecting');
    expect(chart.states).toHaveLength(12);
  });
});

describe('staticFile', () => {
  it('serves the built pages and assets, and nothing outside the dist folder', async () => {
    const root = tempDir();
    mkdirSync(path.join(root, 'assets'));
    writeFileSync(path.join(root, 'index.html'), '<h1>chat</h1>');
    writeFileSync(path.join(root, 'log.html'), '<h1>log</h1>');
    writeFileSync(path.join(root, 'assets', 'chat-1.js'), 'x');
    const text = async (urlPath: string) => {
      const file = await staticFile(urlPath, root);
      return file === undefined ? undefined : [file.body.toString(), file.contentType];
    };
    expect(await text('/')).toEqual(['<h1>chat</h1>', 'text/html; charset=utf-8']);
    expect(await text('/log')).toEqual(['<h1>log</h1>', 'text/html; charset=utf-8']);
    expect(await text('/assets/chat-1.js')).toEqual(['x', 'text/javascript; charset=utf-8']);
    expect(await text('/assets/../../package.json')).toBeUndefined();
    expect(await text('/assets/%2e%2e/%2e%2e/package.json')).toBeUndefined();
    expect(await text('/assets/missing.js')).toBeUndefined();
    expect(await text('/assets')).toBeUndefined();
  });
});
