import { afterEach, describe, expect, it } from 'vitest';
import { scriptedModel } from '../../adapters/scripted-model.ts';
import type { Fact } from '../../events/facts.ts';
import { consoleHandler } from '../../http/console-handler.ts';
import type { Runtime } from '../../runtime.ts';
import type { EventStore } from '../../store/event-store.ts';
import { memoryStore } from '../../store/memory/memory-store.ts';
import { addTool, testRuntime } from '../runtime/runtime-helpers.ts';

const base = 'http://127.0.0.1:3000/api/console';
const onLoopback = { clientAddress: () => '127.0.0.1' };
const get = (path: string, headers: Record<string, string> = {}) =>
  new Request(`${base}${path}`, { headers });
const act = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  new Request(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });

let runtime: Runtime | undefined;
afterEach(async () => {
  await runtime?.close();
  runtime = undefined;
});

/**
 * A runtime whose model (one script for every session, in order) asks for add(2, 3) in three
 * runs (the tool asks a person), then answers each.
 */
function askingRuntime(store: EventStore) {
  const add = addTool('ask');
  const call = { text: 'Adding.', toolCalls: [{ name: 'add', input: { a: 2, b: 3 } }] };
  const answer = { text: 'It is 5.' };
  const steps = [call, call, call, answer, answer, answer];
  runtime = testRuntime(store, { model: scriptedModel(steps), tools: { add: add.tool } });
  return { runtime, executions: add.executions };
}

/** Resolves once the session's log holds a fact `until` accepts (already, or when appended). */
function factOf(store: EventStore, sessionId: string, until: (fact: Fact) => boolean) {
  return new Promise<Fact>((resolve) => {
    const unsubscribe = store.subscribe(sessionId, (fact) => {
      if (until(fact)) {
        unsubscribe();
        resolve(fact);
      }
    });
    void store.read(sessionId).then((facts) => {
      const found = facts.find(until);
      if (found !== undefined) {
        unsubscribe();
        resolve(found);
      }
    });
  });
}

/** Three sessions: `ask-1` waits for a person, `done-2` completed, `stopped-3` aborted. */
async function threeSessions() {
  const store = memoryStore();
  const { runtime, executions } = askingRuntime(store);
  for (const sessionId of ['ask-1', 'done-2', 'stopped-3']) {
    await runtime.send({ sessionId, text: 'What is 2 + 3?' });
    await factOf(store, sessionId, (fact) => fact.type === 'tool.permission.requested');
  }
  const [pending] = await runtime.pending('done-2');
  await runtime.decide({ sessionId: 'done-2', callId: pending?.callId ?? '', decision: 'allow' });
  await factOf(store, 'done-2', (fact) => fact.type === 'run.ended');
  await runtime.stop({ sessionId: 'stopped-3' });
  executions.length = 0;
  return { store, runtime, executions };
}

describe('consoleHandler: the sessions list', () => {
  it('lists every session quietest first with its status and counts per status', async () => {
    const { store, runtime } = await threeSessions();
    const handler = consoleHandler(runtime, { store, ...onLoopback });
    const response = await handler(get('/sessions'));
    expect(response.status).toBe(200);
    const list = await response.json();
    expect(list.total).toBe(3);
    expect(list.counts).toEqual({
      awaiting: 1,
      parked: 0,
      running: 0,
      completed: 1,
      failed: 0,
      aborted: 1,
    });
    expect(
      list.sessions.map((session: { sessionId: string; status: string }) => [
        session.sessionId,
        session.status,
      ]),
    ).toEqual([
      ['ask-1', 'awaiting'],
      ['done-2', 'completed'],
      ['stopped-3', 'aborted'],
    ]);
    expect(list.sessions[0].pending).toEqual([
      expect.objectContaining({ kind: 'permission', name: 'add', input: { a: 2, b: 3 } }),
    ]);
  });

  it('filters by status, worker and older than as turnlog sessions does, counting all but the status filter', async () => {
    const { store, runtime } = await threeSessions();
    const last = (await store.read('stopped-3')).at(-1) as Fact;
    const now = () => Date.parse(last.at) + 3_600_000;
    const handler = consoleHandler(runtime, { store, now, ...onLoopback });
    const awaiting = await (await handler(get('/sessions?status=awaiting,failed'))).json();
    expect(awaiting.sessions.map((session: { sessionId: string }) => session.sessionId)).toEqual([
      'ask-1',
    ]);
    expect(awaiting.total).toBe(1);
    expect(awaiting.counts.completed).toBe(1);
    expect((await (await handler(get('/sessions?worker=w-1'))).json()).total).toBe(0);
    expect((await (await handler(get('/sessions?olderThan=2h'))).json()).total).toBe(0);
    expect((await (await handler(get('/sessions?olderThan=30m'))).json()).total).toBe(3);
    const limited = await (await handler(get('/sessions?limit=1'))).json();
    expect([limited.sessions.length, limited.total]).toEqual([1, 3]);
  });

  it('finds a session by a part of its id, by a run id and by a call id', async () => {
    const { store, runtime } = await threeSessions();
    const handler = consoleHandler(runtime, { store, ...onLoopback });
    const found = async (q: string) =>
      (await (await handler(get(`/sessions?q=${encodeURIComponent(q)}`))).json()).sessions.map(
        (session: { sessionId: string; matched: string }) => [session.sessionId, session.matched],
      );
    expect(await found('done')).toEqual([['done-2', 'session']]);
    const facts = await store.read('stopped-3');
    expect(await found(facts[0]?.runId ?? '')).toEqual([['stopped-3', 'run']]);
    const [pending] = await runtime.pending('ask-1');
    expect(await found(pending?.callId ?? '')).toEqual([['ask-1', 'call']]);
    expect(await found('nothing-like-it')).toEqual([]);
  });

  it('answers a bad filter with 400 and names what to write', async () => {
    const { store, runtime } = await threeSessions();
    const handler = consoleHandler(runtime, { store, ...onLoopback });
    const badStatus = await handler(get('/sessions?status=stuck'));
    expect(badStatus.status).toBe(400);
    expect((await badStatus.json()).message).toContain('"stuck" is not a status');
    expect((await handler(get('/sessions?olderThan=soon'))).status).toBe(400);
  });
});

describe('consoleHandler: actions through the runtime', () => {
  it('approves a pending call: the run executes it once and completes', async () => {
    const { store, runtime, executions } = await threeSessions();
    const handler = consoleHandler(runtime, { store, ...onLoopback });
    const [pending] = await runtime.pending('ask-1');
    const callId = pending?.callId ?? '';
    const response = await handler(act('/sessions/ask-1/decide', { callId, decision: 'allow' }));
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ decided: callId, decision: 'allow' });
    const ended = await factOf(store, 'ask-1', (fact) => fact.type === 'run.ended');
    expect(ended).toMatchObject({ type: 'run.ended', status: 'completed' });
    expect(executions).toEqual([{ a: 2, b: 3 }]);
    const decided = (await store.read('ask-1')).find(
      (fact) => fact.type === 'tool.permission.decided',
    );
    expect(decided).toMatchObject({ decision: 'allow', reason: 'decided from the console' });

    // The runtime's own check: a call already decided is not decided twice.
    const again = await handler(act('/sessions/ask-1/decide', { callId, decision: 'deny' }));
    expect(again.status).toBe(404);
    expect((await again.json()).error).toBe('NoActiveRunError');
  });

  it('denies and reports unknown through runtime.decide, and refuses abort (a stop) or a missing call', async () => {
    const { store, runtime, executions } = await threeSessions();
    const handler = consoleHandler(runtime, { store, ...onLoopback });
    const abort = await handler(act('/sessions/ask-1/decide', { callId: 'x', decision: 'abort' }));
    expect(abort.status).toBe(400);
    const unknownCall = await handler(
      act('/sessions/ask-1/decide', { callId: 'no-such-call', decision: 'deny' }),
    );
    expect(unknownCall.status).toBe(404);
    expect((await unknownCall.json()).error).toBe('UnknownDecisionError');
    const [pending] = await runtime.pending('ask-1');
    // report-unknown answers an indeterminate call only: the runtime refuses it for an ask.
    const misfit = await handler(
      act('/sessions/ask-1/decide', { callId: pending?.callId, decision: 'report-unknown' }),
    );
    expect(misfit.status).toBe(400);
    expect((await misfit.json()).error).toBe('InvalidDecisionError');
    const denied = await handler(
      act('/sessions/ask-1/decide', { callId: pending?.callId, decision: 'deny' }),
    );
    expect(denied.status).toBe(200);
    await factOf(store, 'ask-1', (fact) => fact.type === 'run.ended');
    expect(executions).toEqual([]);
  });

  it('stops a run waiting for a person: it ends aborted; a session with no run is a 404', async () => {
    const { store, runtime } = await threeSessions();
    const handler = consoleHandler(runtime, { store, ...onLoopback });
    const response = await handler(act('/sessions/ask-1/stop', {}));
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ stopped: 'ask-1' });
    const ended = await factOf(store, 'ask-1', (fact) => fact.type === 'run.ended');
    expect(ended).toMatchObject({ status: 'aborted' });
    const list = await (await handler(get('/sessions?status=aborted'))).json();
    expect(list.total).toBe(2);
    expect((await handler(act('/sessions/done-2/stop', {}))).status).toBe(404);
  });
});

describe('consoleHandler: the trust layer', () => {
  it('refuses a cross-origin action with 403 before anything reaches the log', async () => {
    const { store, runtime } = await threeSessions();
    const handler = consoleHandler(runtime, { store, ...onLoopback });
    const before = await store.read('ask-1');
    const [pending] = await runtime.pending('ask-1');
    const response = await handler(
      act(
        '/sessions/ask-1/decide',
        { callId: pending?.callId, decision: 'allow' },
        { origin: 'http://evil.example' },
      ),
    );
    expect(response.status).toBe(403);
    expect(await response.json()).toMatchObject({ reason: 'cross-origin' });
    const sameSite = await handler(
      act('/sessions/ask-1/stop', {}, { 'sec-fetch-site': 'same-site' }),
    );
    expect(sameSite.status).toBe(403);
    expect(await store.read('ask-1')).toEqual(before);
  });

  it('refuses a text/plain action (a cross-site form) with 415', async () => {
    const { store, runtime } = await threeSessions();
    const handler = consoleHandler(runtime, { store, ...onLoopback });
    const before = await store.read('ask-1');
    const [pending] = await runtime.pending('ask-1');
    const form = new Request(`${base}/sessions/ask-1/decide`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: JSON.stringify({ callId: pending?.callId, decision: 'allow' }),
    });
    const response = await handler(form);
    expect(response.status).toBe(415);
    expect(await response.json()).toMatchObject({ reason: 'content-type' });
    expect((await handler(get('/sessions/ask-1/stop'))).status).toBe(405);
    expect(await store.read('ask-1')).toEqual(before);
  });

  it('refuses a client off loopback without a token, reads and actions alike; a token lets it in', async () => {
    const { store, runtime } = await threeSessions();
    const remote = { clientAddress: () => '192.0.2.7' };
    const handler = consoleHandler(runtime, { store, ...remote });
    const list = await handler(get('/sessions'));
    expect(list.status).toBe(403);
    expect(await list.json()).toMatchObject({ reason: 'forbidden' });
    const stop = await handler(act('/sessions/ask-1/stop', {}));
    expect(stop.status).toBe(403);
    expect((await store.read('ask-1')).some((fact) => fact.type === 'run.ended')).toBe(false);

    const withToken = consoleHandler(runtime, { store, token: 's3cret', ...remote });
    expect((await withToken(get('/sessions'))).status).toBe(401);
    const authorized = await withToken(get('/sessions', { authorization: 'Bearer s3cret' }));
    expect(authorized.status).toBe(200);
    expect((await authorized.json()).total).toBe(3);
  });

  it('answers a bad percent-encoding with 400, another path with 404, a GET action with 405', async () => {
    const { store, runtime } = await threeSessions();
    const handler = consoleHandler(runtime, { store, ...onLoopback });
    const bad = await handler(act('/sessions/%ZZ/stop', {}));
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ reason: 'bad-request' });
    expect((await handler(get('/sessions/ask-1/facts'))).status).toBe(404);
    const read = await handler(get('/sessions/ask-1/decide'));
    expect([read.status, read.headers.get('allow')]).toEqual([405, 'POST']);
  });

  it('asks authorize for each read and action with its name and session', async () => {
    const { store, runtime } = await threeSessions();
    const asked: unknown[] = [];
    const handler = consoleHandler(runtime, {
      store,
      authorize: (_request, action) => {
        asked.push(action);
        return action.kind === 'read';
      },
    });
    expect((await handler(get('/sessions'))).status).toBe(200);
    expect((await handler(act('/sessions/ask-1/stop', {}))).status).toBe(403);
    expect(asked).toEqual([
      { name: 'console.sessions', kind: 'read' },
      { name: 'console.stop', kind: 'act', sessionId: 'ask-1' },
    ]);
  });

  it('answers a store that throws a plain Error with a 500 without its message, reported with the same id', async () => {
    const store = memoryStore();
    const secret = new Error(
      'SELECT * FROM turnlog.facts: password authentication failed for "admin"',
    );
    const failing: EventStore = { ...store, sessions: () => Promise.reject(secret) };
    const reported: { error: unknown; errorId: string }[] = [];
    const handler = consoleHandler(askingRuntime(store).runtime, {
      store: failing,
      ...onLoopback,
      onError: (error, { errorId }) => reported.push({ error, errorId }),
    });
    const response = await handler(get('/sessions'));
    expect(response.status).toBe(500);
    const text = await response.text();
    expect(text).not.toContain('SELECT');
    expect(text).not.toContain('password');
    const body = JSON.parse(text);
    expect(body).toEqual({
      error: 'InternalError',
      message: `internal error; the server logged it as ${body.errorId}`,
      errorId: expect.stringMatching(/^[0-9a-f-]{36}$/),
    });
    expect(reported).toEqual([{ error: secret, errorId: body.errorId }]);
  });
});
