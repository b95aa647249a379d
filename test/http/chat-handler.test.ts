import { afterEach, describe, expect, it } from 'vitest';
import { scriptedModel } from '../../adapters/scripted-model.ts';
import type { TurnlogUIMessage } from '../../adapters/ui/ui-message-types.ts';
import { chatHandler } from '../../http/chat-handler.ts';
import type { Runtime } from '../../runtime.ts';
import { memoryStore } from '../../store/memory/memory-store.ts';
import { asSent, readResponseLikeUseChat } from '../adapters/ui/ui-stream-reader.ts';
import { addTool, testRuntime } from '../runtime/runtime-helpers.ts';

const base = 'http://127.0.0.1:3000';
const user = (text: string): TurnlogUIMessage => ({
  id: `user-${text.length}`,
  role: 'user',
  parts: [{ type: 'text', text }],
});

/** The body useChat's DefaultChatTransport posts. */
const post = (body: Record<string, unknown>, path = '/api/chat') =>
  new Request(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ trigger: 'submit-message', messageId: undefined, ...body }),
  });
const get = (path: string) => new Request(`${base}${path}`);
const stop = (chatId: string) =>
  new Request(`${base}/api/chat/${chatId}/stop`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
  });
/** The client is on loopback, as `toWebRequest` would record it: the trust layer's default lets it in. */
const onLoopback = { clientAddress: () => '127.0.0.1' };

/** The assistant message with each pending approval answered, as useChat sends it back. */
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

const toolPart = (message: TurnlogUIMessage | undefined) =>
  message?.parts.find((part) => part.type === 'tool-add') as Record<string, unknown> | undefined;

let runtime: Runtime | undefined;
afterEach(async () => {
  await runtime?.close();
  runtime = undefined;
});

/** A runtime whose model asks for add(2, 3), then answers. */
function addRuntime(permission: 'allow' | 'ask') {
  const add = addTool(permission);
  runtime = testRuntime(memoryStore(), {
    model: scriptedModel([
      { text: 'Adding.', toolCalls: [{ name: 'add', input: { a: 2, b: 3 } }] },
      { text: 'It is 5.' },
    ]),
    tools: { add: add.tool },
  });
  return { runtime, executions: add.executions };
}

describe('chatHandler', () => {
  it('streams a run for a user message, and serves the session from the log for a page load', async () => {
    const { runtime, executions } = addRuntime('allow');
    const handler = chatHandler(runtime, onLoopback);
    const response = await handler(post({ id: 'c1', messages: [user('What is 2 + 3?')] }));
    expect(response.status).toBe(200);
    expect(response.headers.get('x-vercel-ai-ui-message-stream')).toBe('v1');
    const { message } = await readResponseLikeUseChat(response);
    expect(message?.metadata).toMatchObject({ status: 'completed', sessionId: 'c1' });
    expect(toolPart(message)).toMatchObject({ state: 'output-available', output: 5 });
    expect(executions).toEqual([{ a: 2, b: 3 }]);

    const page = await handler(get('/api/chat/c1/messages'));
    expect(page.status).toBe(200);
    const messages = (await page.json()) as TurnlogUIMessage[];
    expect(messages.map((each) => each.role)).toEqual(['user', 'assistant']);
    expect(messages[1]).toEqual(asSent(message));
    // Nothing unfinished: resumeStream() gets 204.
    expect((await handler(get('/api/chat/c1/stream'))).status).toBe(204);
  });

  it('asks, resumes from the log, records an approval and continues the same message', async () => {
    const { runtime, executions } = addRuntime('ask');
    const handler = chatHandler(runtime, onLoopback);
    const first = await handler(post({ id: 'c2', messages: [user('Add 2 and 3')] }));
    const parked = (await readResponseLikeUseChat(first)).message as TurnlogUIMessage;
    expect(parked.metadata).toMatchObject({ status: 'awaiting' });
    expect(toolPart(parked)).toMatchObject({ state: 'approval-requested' });

    // A page that reconnects (resumeStream) gets the run rebuilt from the log, to where it waits.
    const resumed = await readResponseLikeUseChat(await handler(get('/api/chat/c2/stream')));
    expect(resumed.message).toEqual(parked);

    const answer = await handler(
      post({ id: 'c2', messages: [user('Add 2 and 3'), answered(parked, true)] }),
    );
    expect(answer.status).toBe(200);
    const done = (await readResponseLikeUseChat(answer, answered(parked, true))).message;
    expect(done?.id).toBe(parked.id);
    expect(done?.metadata).toMatchObject({ status: 'completed' });
    expect(toolPart(done)).toMatchObject({ state: 'output-available', output: 5 });
    expect(executions).toEqual([{ a: 2, b: 3 }]);
  });

  it('records a denial: the tool never runs and the part ends output-denied', async () => {
    const { runtime, executions } = addRuntime('ask');
    const handler = chatHandler(runtime, onLoopback);
    const parked = (
      await readResponseLikeUseChat(await handler(post({ id: 'c3', messages: [user('Add')] })))
    ).message as TurnlogUIMessage;
    const answer = await handler(
      post({ id: 'c3', messages: [user('Add'), answered(parked, false)] }),
    );
    const done = (await readResponseLikeUseChat(answer, answered(parked, false))).message;
    expect(toolPart(done)).toMatchObject({ state: 'output-denied' });
    expect(executions).toEqual([]);
  });

  it('refuses a message while a decision is pending with a 409 JSON error, recording nothing', async () => {
    const { runtime } = addRuntime('ask');
    const handler = chatHandler(runtime, onLoopback);
    await readResponseLikeUseChat(await handler(post({ id: 'c4', messages: [user('Add')] })));
    const before = (await runtime.facts('c4')).length;
    const refused = await handler(post({ id: 'c4', messages: [user('Add'), user('Hurry up')] }));
    expect(refused.status).toBe(409);
    expect(await refused.json()).toEqual({
      error: 'SessionBusyError',
      message: expect.stringContaining('This message was not sent'),
    });
    expect(await runtime.facts('c4')).toHaveLength(before);
  });

  it('stops a parked run: it ends aborted, and nothing is left to resume', async () => {
    const { runtime, executions } = addRuntime('ask');
    const handler = chatHandler(runtime, onLoopback);
    await readResponseLikeUseChat(await handler(post({ id: 'c5', messages: [user('Add')] })));
    const stopped = await handler(stop('c5'));
    expect(stopped.status).toBe(200);
    expect(await stopped.json()).toEqual({ stopped: true });
    const facts = await runtime.facts('c5');
    expect(facts.at(-1)).toMatchObject({ type: 'run.ended', status: 'aborted' });
    expect(executions).toEqual([]);
    expect((await handler(get('/api/chat/c5/stream'))).status).toBe(204);
    const again = await handler(stop('c5'));
    expect(again.status).toBe(404);
    expect((await again.json()).error).toBe('NoActiveRunError');
  });

  it('answers the long poll once the waiting run moves, and 204 without a run', async () => {
    const { runtime } = addRuntime('ask');
    const handler = chatHandler(runtime, onLoopback);
    expect((await handler(get('/api/chat/c6/moved?after=0'))).status).toBe(204);
    const parked = (
      await readResponseLikeUseChat(await handler(post({ id: 'c6', messages: [user('Add')] })))
    ).message as TurnlogUIMessage;
    const seq = parked.metadata?.seq as number;
    const moved = await handler(get(`/api/chat/c6/moved?after=${seq}`));
    const [pending] = await runtime.pending('c6');
    await runtime.decide({ sessionId: 'c6', callId: pending?.callId as string, decision: 'allow' });
    expect(await moved.json()).toEqual({ seq: seq + 1 });
    expect((await handler(get('/api/chat/c6/moved?after=x'))).status).toBe(400);
  });

  it('maps chat ids to sessions, asks authorize first, and answers routes it does not have', async () => {
    const { runtime } = addRuntime('allow');
    const asked: string[] = [];
    const handler = chatHandler(runtime, {
      basePath: '/chat/',
      sessionId: (chatId, request) => `${request.headers.get('x-user')}:${chatId}`,
      authorize: (request, action) => {
        asked.push(`${action.name} ${action.kind} ${action.sessionId}`);
        return request.headers.get('x-user') === 'ana';
      },
    });
    const asAna = post({ id: 'c7', messages: [user('Add')] }, '/chat');
    asAna.headers.set('x-user', 'ana');
    await readResponseLikeUseChat(await handler(asAna));
    expect((await runtime.facts('ana:c7')).at(-1)).toMatchObject({ type: 'run.ended' });

    const asBob = get('/chat/c7/messages');
    asBob.headers.set('x-user', 'bob');
    const refused = await handler(asBob);
    expect(refused.status).toBe(403);
    expect(await refused.json()).toMatchObject({ error: 'HttpRefusedError', reason: 'forbidden' });
    expect(asked).toEqual(['chat.post act undefined', 'chat.messages read bob:c7']);

    expect((await handler(get('/chat/c7/elsewhere'))).status).toBe(404);
    expect((await handler(get('/api/chat'))).status).toBe(404);
    const wrongMethod = await handler(get('/chat'));
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.get('allow')).toBe('POST');
  });

  it('refuses a body that is not what useChat sends, and one over maxBodyBytes', async () => {
    const { runtime } = addRuntime('allow');
    const handler = chatHandler(runtime, { ...onLoopback, maxBodyBytes: 1024 });
    const notJson = await handler(
      new Request(`${base}/api/chat`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{',
      }),
    );
    expect(notJson.status).toBe(400);
    const noId = await handler(post({ messages: [user('Add')] }));
    expect(noId.status).toBe(400);
    expect(await noId.json()).toMatchObject({ error: 'HttpRefusedError', reason: 'bad-request' });
    const badMessages = await handler(post({ id: 'c8', messages: [{ role: 'user' }] }));
    expect(badMessages.status).toBe(400);
    const noAnswer = await handler(
      post({
        id: 'c8',
        messages: [{ id: 'a', role: 'assistant', parts: [{ type: 'text', text: 'hi' }] }],
      }),
    );
    expect(await noAnswer.json()).toMatchObject({
      reason: 'bad-request',
      message: expect.stringContaining('answers no approval'),
    });
    const large = await handler(post({ id: 'c8', messages: [user('x'.repeat(2000))] }));
    expect(large.status).toBe(413);
    expect(await runtime.facts('c8')).toEqual([]);
  });

  it('passes every request through the trust layer first: a foreign page or client acts on nothing', async () => {
    const { runtime } = addRuntime('allow');
    const fromElsewhere = post({ id: 'c9', messages: [user('Add')] });
    fromElsewhere.headers.set('origin', 'https://evil.example');
    const crossSite = await chatHandler(runtime, onLoopback)(fromElsewhere);
    expect(crossSite.status).toBe(403);
    expect((await crossSite.json()).reason).toBe('cross-origin');
    const form = new Request(`${base}/api/chat`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: JSON.stringify({ id: 'c9', messages: [user('Add')] }),
    });
    expect((await chatHandler(runtime, onLoopback)(form)).status).toBe(415);
    // No client address recorded (not behind toWebRequest), no token, no authorize: refused.
    const unknownClient = await chatHandler(runtime)(post({ id: 'c9', messages: [user('Add')] }));
    expect(unknownClient.status).toBe(403);
    const rebound = new Request('http://rebind.attacker.example/api/chat/c9/messages');
    expect((await chatHandler(runtime, onLoopback)(rebound)).status).toBe(403);
    expect(await runtime.facts('c9')).toEqual([]);
  });

  it('regenerates the last answer: a new run for the same input, shown once after a reload', async () => {
    runtime = testRuntime(memoryStore(), {
      model: scriptedModel([{ text: 'First answer.' }, { text: 'Second answer.' }]),
    });
    const handler = chatHandler(runtime, onLoopback);
    const question = user('Tell me a joke');
    const first = (
      await readResponseLikeUseChat(await handler(post({ id: 'r1', messages: [question] })))
    ).message as TurnlogUIMessage;
    // useChat's regenerate(): the messages up to the user's, trigger regenerate-message.
    const again = await handler(
      post({ id: 'r1', messages: [question], trigger: 'regenerate-message' }),
    );
    expect(again.status).toBe(200);
    const second = (await readResponseLikeUseChat(again)).message as TurnlogUIMessage;
    expect(second.id).not.toBe(first.id);
    expect(second.parts.at(-1)).toMatchObject({ type: 'text', text: 'Second answer.' });
    const facts = await runtime.facts('r1');
    expect(facts.filter((fact) => fact.type === 'run.started')).toMatchObject([
      { input: { text: 'Tell me a joke' } },
      { input: { text: 'Tell me a joke' }, regenerates: first.id },
    ]);
    const page = (await (await handler(get('/api/chat/r1/messages'))).json()) as TurnlogUIMessage[];
    expect(page.map((message) => [message.role, message.id])).toEqual([
      ['user', expect.any(String)],
      ['assistant', second.id],
    ]);
    // The model saw the earlier answer too: the log hides nothing from it.
    expect((await runtime.history('r1')).map((message) => message.role)).toEqual([
      'user',
      'assistant',
      'user',
      'assistant',
    ]);
    const older = await handler(
      post({ id: 'r1', messages: [question], trigger: 'regenerate-message', messageId: first.id }),
    );
    expect(older.status).toBe(409);
    expect(await older.json()).toMatchObject({ error: 'RegenerateRefused' });
  });

  it('refuses to regenerate an answer whose run is unfinished, with a 409 the page shows', async () => {
    const { runtime } = addRuntime('ask');
    const handler = chatHandler(runtime, onLoopback);
    await readResponseLikeUseChat(await handler(post({ id: 'r2', messages: [user('Add')] })));
    const refused = await handler(
      post({ id: 'r2', messages: [user('Add')], trigger: 'regenerate-message' }),
    );
    expect(refused.status).toBe(409);
    expect((await refused.json()).error).toBe('SessionBusyError');
    expect((await runtime.facts('r2')).filter((fact) => fact.type === 'run.started')).toHaveLength(
      1,
    );
  });

  it('sends an attached image to the model, and gives it back on a page load', async () => {
    const model = scriptedModel([{ text: 'A pixel.' }]);
    runtime = testRuntime(memoryStore(), { model });
    const handler = chatHandler(runtime, onLoopback);
    const pixel =
      'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
    const withImage: TurnlogUIMessage = {
      id: 'u-image',
      role: 'user',
      parts: [
        {
          type: 'file',
          mediaType: 'image/png',
          filename: 'pixel.png',
          url: `data:image/png;base64,${pixel}`,
        },
        { type: 'text', text: 'What is this?' },
      ],
    };
    await readResponseLikeUseChat(await handler(post({ id: 'f1', messages: [withImage] })));
    const prompt = model.requests[0]?.prompt.find((message) => message.role === 'user');
    expect(prompt?.content).toContainEqual({
      type: 'file',
      mediaType: 'image/png',
      data: { type: 'data', data: pixel },
      filename: 'pixel.png',
    });
    const page = (await (await handler(get('/api/chat/f1/messages'))).json()) as TurnlogUIMessage[];
    expect(page[0]?.parts).toEqual(withImage.parts);
    const byUrl = {
      ...withImage,
      parts: [
        { type: 'file', mediaType: 'image/png', url: 'https://example.com/a.png' },
        { type: 'text', text: 'x' },
      ],
    };
    const refused = await handler(post({ id: 'f2', messages: [byUrl] }));
    expect(refused.status).toBe(400);
  });

  it('answers a runtime call that throws a plain Error with a 500 without its message, reported with the same id', async () => {
    const { runtime } = addRuntime('allow');
    const secret = new Error('ENOENT: /srv/app/.turnlog/c1.json (token sk-live-1234)');
    const failing = { ...runtime, facts: async () => Promise.reject(secret) } as Runtime;
    const reported: { error: unknown; errorId: string }[] = [];
    const handler = chatHandler(failing, {
      ...onLoopback,
      onError: (error, { errorId }) => reported.push({ error, errorId }),
    });
    const response = await handler(get('/api/chat/c1/messages'));
    expect(response.status).toBe(500);
    const text = await response.text();
    expect(text).not.toContain('sk-live');
    expect(text).not.toContain('/srv/app');
    const body = JSON.parse(text);
    expect(body).toEqual({
      error: 'InternalError',
      message: `internal error; the server logged it as ${body.errorId}`,
      errorId: expect.stringMatching(/^[0-9a-f-]{36}$/),
    });
    expect(reported).toEqual([{ error: secret, errorId: body.errorId }]);
  });
});

/** Lets what the event loop has queued run (pipes passing a cancel on), without waiting on time. */
async function settled() {
  for (let turn = 0; turn < 3; turn += 1) await new Promise((resolve) => setImmediate(resolve));
}

describe('chatHandler follows a run only while a response needs it', () => {
  /** The runtime, with a count of the handles `follow()` gave that were never let go. */
  function counting(inner: Runtime) {
    const held = { count: 0 };
    const follow: Runtime['follow'] = async (sessionId, options) => {
      const turn = await inner.follow(sessionId, options);
      const signal = options?.signal;
      if (turn === undefined || signal?.aborted) return turn;
      held.count += 1;
      signal?.addEventListener('abort', () => {
        held.count -= 1;
      });
      return turn;
    };
    return { runtime: { ...inner, follow } as Runtime, held };
  }

  it('keeps what it held after the first of 200 abandoned long polls and resumes of a parked run', async () => {
    const { runtime: inner } = addRuntime('ask');
    const { runtime, held } = counting(inner);
    const handler = chatHandler(
      {
        send: (input) => inner.send(input),
        decide: (input) => inner.decide(input),
        stop: (input) => inner.stop(input),
        facts: (sessionId) => inner.facts(sessionId),
        follow: runtime.follow,
      },
      onLoopback,
    );
    const parked = (
      await readResponseLikeUseChat(await handler(post({ id: 'c20', messages: [user('Add')] })))
    ).message as TurnlogUIMessage;
    const seq = parked.metadata?.seq as number;
    let afterFirst: number | undefined;
    for (let visit = 0; visit < 200; visit += 1) {
      const moved = await handler(get(`/api/chat/c20/moved?after=${seq}`));
      const resumed = await handler(get('/api/chat/c20/stream'));
      expect([moved.status, resumed.status]).toEqual([200, 200]);
      // The page reloads: both responses are abandoned.
      await moved.body?.cancel();
      await resumed.body?.cancel();
      // A cancel reaches the handler's stream through the response's pipes, a few ticks later.
      await settled();
      afterFirst ??= held.count;
    }
    expect(afterFirst).toBe(0);
    expect(held.count).toBe(0);
    // The run still goes on for the page that answers.
    const turn = await inner.follow('c20');
    const [pending] = await inner.pending('c20');
    await inner.decide({ sessionId: 'c20', callId: pending?.callId as string, decision: 'allow' });
    expect(await turn?.done).toMatchObject({ status: 'completed', text: 'It is 5.' });
  });
});
