import { describe, expect, it } from 'vitest';
import { setClientAddress } from '../../http/client-address.ts';
import { HttpRefusedError } from '../../http/http-errors.ts';
import { type RequestAction, RequestGuard } from '../../http/request-guard.ts';

const act: RequestAction = { name: 'decide', kind: 'act', sessionId: 's1' };
const read: RequestAction = { name: 'facts', kind: 'read', sessionId: 's1' };
const page: RequestAction = { name: 'page', kind: 'page' };

/** A request to the server at 127.0.0.1:3000 from a client at `from` (loopback by default). */
function request(
  headers: Record<string, string>,
  { method = 'POST', body, from = '127.0.0.1', url = 'http://127.0.0.1:3000/x' } = {} as {
    method?: string;
    body?: string;
    from?: string;
    url?: string;
  },
): Request {
  const made = new Request(url, {
    method,
    headers,
    ...(body === undefined || method === 'GET' ? {} : { body }),
  });
  setClientAddress(made, from);
  return made;
}

const json = { 'content-type': 'application/json' };

/** The refusal's reason and status, or 'allowed'. */
async function verdict(guard: RequestGuard, made: Request, action: RequestAction) {
  try {
    await guard.check(made, action);
    return 'allowed';
  } catch (error) {
    if (!HttpRefusedError.isInstance(error)) throw error;
    return `${error.status} ${error.reason}`;
  }
}

describe('RequestGuard: Host (DNS rebinding)', () => {
  const guard = new RequestGuard({ allowedHosts: ['app.example.com', '.corp.example'] });

  it.each([
    ['127.0.0.1:3000', 'allowed'],
    ['localhost:3000', 'allowed'],
    ['LOCALHOST.', 'allowed'],
    ['tab.localhost:3000', 'allowed'],
    ['[::1]:3000', 'allowed'],
    ['0x7f.1:3000', 'allowed'],
    ['10.1.2.3:3000', 'allowed'],
    ['app.example.com', 'allowed'],
    ['corp.example', 'allowed'],
    ['a.b.corp.example:8080', 'allowed'],
    ['rebind.attacker.example:3000', '403 host'],
    ['example.com', '403 host'],
    ['localhost.attacker.example', '403 host'],
    ['evil.com/x', '400 bad-request'],
    ['user@localhost', '400 bad-request'],
    ['localhost:99999', '400 bad-request'],
  ])('Host %s: %s', async (host, expected) => {
    expect(await verdict(guard, request({ host, ...json }), act)).toBe(expected);
    // Pages (no data) are Host-checked too: a rebound page could read them.
    expect(await verdict(guard, request({ host }, { method: 'GET' }), page)).toBe(expected);
  });
});

describe('RequestGuard: Origin and Sec-Fetch-Site', () => {
  const guard = new RequestGuard({ allowedOrigins: ['http://localhost:5173/'] });

  it.each([
    [{ origin: 'http://127.0.0.1:3000' }, 'allowed'],
    [{ origin: 'http://localhost:5173' }, 'allowed'],
    [{ origin: 'http://127.0.0.1:3001' }, '403 cross-origin'],
    [{ origin: 'https://127.0.0.1:3000' }, '403 cross-origin'],
    [{ origin: 'http://attacker.example' }, '403 cross-origin'],
    [{ origin: 'null' }, '403 cross-origin'],
    [{ 'sec-fetch-site': 'same-origin' }, 'allowed'],
    [{ 'sec-fetch-site': 'none' }, 'allowed'],
    [{ 'sec-fetch-site': 'same-site' }, '403 cross-origin'],
    [{ 'sec-fetch-site': 'cross-site' }, '403 cross-origin'],
    // No Origin and no Sec-Fetch-Site: not a browser (curl, a script); the other checks decide.
    [{}, 'allowed'],
  ])('an action with %j: %s', async (headers, expected) => {
    expect(await verdict(guard, request({ ...headers, ...json }), act)).toBe(expected);
  });

  it('lets a read with a cross-site Sec-Fetch-Site and no Origin through (it cannot read the answer), but not one with a foreign Origin', async () => {
    const get = { method: 'GET' };
    expect(await verdict(guard, request({ 'sec-fetch-site': 'cross-site' }, get), read)).toBe(
      'allowed',
    );
    expect(await verdict(guard, request({ origin: 'http://attacker.example' }, get), read)).toBe(
      '403 cross-origin',
    );
  });
});

describe('RequestGuard: actions take JSON only', () => {
  const guard = new RequestGuard();

  it.each([
    ['application/json', 'allowed'],
    ['application/json; charset=utf-8', 'allowed'],
    ['Application/JSON;charset="UTF-8"', 'allowed'],
    ['application/json; charset=latin1', '415 content-type'],
    ['text/plain', '415 content-type'],
    ['text/plain;charset=UTF-8', '415 content-type'],
    ['application/x-www-form-urlencoded', '415 content-type'],
    ['multipart/form-data; boundary=x', '415 content-type'],
    ['application/json-patch+json', '415 content-type'],
  ])('content-type %s: %s', async (contentType, expected) => {
    expect(await verdict(guard, request({ 'content-type': contentType }), act)).toBe(expected);
  });

  it('refuses an action with no content-type (a no-cors fetch without a body) and one sent as GET', async () => {
    expect(await verdict(guard, request({}), act)).toBe('415 content-type');
    expect(await verdict(guard, request(json, { method: 'GET' }), act)).toBe('405 method');
  });

  it('refuses a text/plain form approving a call, even from the same origin (a form is never JSON)', async () => {
    const form = request(
      { 'content-type': 'text/plain', origin: 'http://127.0.0.1:3000' },
      { body: '{"callId":"call_1","decision":"allow","x":"=1"}' },
    );
    expect(await verdict(guard, form, act)).toBe('415 content-type');
  });
});

describe('RequestGuard: authorize and token', () => {
  it('by default allows clients on loopback only', async () => {
    const guard = new RequestGuard();
    for (const from of ['127.0.0.1', '127.8.9.1', '::1', '::ffff:127.0.0.1']) {
      expect(await verdict(guard, request(json, { from }), act)).toBe('allowed');
    }
    for (const from of ['10.0.0.7', '::ffff:192.168.1.4', 'fe80::1']) {
      expect(await verdict(guard, request(json, { from }), act)).toBe('403 forbidden');
      expect(await verdict(guard, request({}, { from, method: 'GET' }), read)).toBe(
        '403 forbidden',
      );
    }
    // No adapter recorded the address: unknown is not loopback.
    const unknown = new Request('http://127.0.0.1:3000/x', { method: 'POST', headers: json });
    expect(await verdict(guard, unknown, act)).toBe('403 forbidden');
    expect(guard.authenticates).toBe(false);
  });

  it('takes the client address from the clientAddress option (a framework that knows it)', async () => {
    const guard = new RequestGuard({
      clientAddress: (made) => made.headers.get('x-test-peer') ?? undefined,
    });
    const made = new Request('http://127.0.0.1:3000/x', {
      method: 'POST',
      headers: { ...json, 'x-test-peer': '::1' },
    });
    expect(await verdict(guard, made, act)).toBe('allowed');
  });

  it('with a token, needs Authorization: Bearer <token> from every client, loopback included', async () => {
    const guard = new RequestGuard({ token: 's3cret-token' });
    expect(guard.authenticates).toBe(true);
    const bearer = (value: string) => ({ ...json, authorization: value });
    expect(
      await verdict(guard, request(bearer('Bearer s3cret-token'), { from: '10.0.0.7' }), act),
    ).toBe('allowed');
    expect(await verdict(guard, request(bearer('bearer  s3cret-token')), act)).toBe('allowed');
    for (const wrong of [
      'Bearer s3cret-toke',
      'Bearer s3cret-token2',
      'Bearer ',
      'Basic s3cret-token',
      '',
    ]) {
      expect(await verdict(guard, request(bearer(wrong)), act)).toBe('401 unauthenticated');
    }
    expect(await verdict(guard, request({}, { method: 'GET' }), read)).toBe('401 unauthenticated');
    // The other checks still run first: a token does not let a cross-site form in.
    expect(
      await verdict(
        guard,
        request({ ...bearer('Bearer s3cret-token'), 'content-type': 'text/plain' }),
        act,
      ),
    ).toBe('415 content-type');
  });

  it('asks authorize (sync or async) with the request and the action, after the other checks', async () => {
    const asked: RequestAction[] = [];
    const guard = new RequestGuard({
      authorize: async (made, action) => {
        asked.push(action);
        return made.headers.get('x-user') === 'ada' && action.sessionId === 's1';
      },
    });
    expect(
      await verdict(guard, request({ ...json, 'x-user': 'ada' }, { from: '10.0.0.7' }), act),
    ).toBe('allowed');
    expect(await verdict(guard, request({ ...json, 'x-user': 'bob' }), act)).toBe('403 forbidden');
    expect(await verdict(guard, request({ 'x-user': 'ada' }), act)).toBe('415 content-type');
    expect(asked).toEqual([act, act]);
    const sync = new RequestGuard({ authorize: (_made, action) => action.kind === 'read' });
    expect(await verdict(sync, request({}, { method: 'GET' }), read)).toBe('allowed');
    expect(await verdict(sync, request(json), act)).toBe('403 forbidden');
  });
});

describe('RequestGuard.handle and act', () => {
  it('answers a refusal as JSON with its status and never calls the handler', async () => {
    const guard = new RequestGuard();
    let calls = 0;
    const handler = guard.handle(act, () => {
      calls += 1;
      return Response.json({ ok: true });
    });
    const refused = await handler(request({ 'content-type': 'text/plain' }, { body: 'x' }));
    expect(refused.status).toBe(415);
    expect(refused.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(await refused.json()).toEqual({
      error: 'HttpRefusedError',
      reason: 'content-type',
      message: 'An action\'s body must be application/json (UTF-8), not "text/plain".',
    });
    const allowed = await handler(request(json, { body: '{}' }));
    expect(await allowed.json()).toEqual({ ok: true });
    expect(calls).toBe(1);
  });

  it('act checks, then reads the body as one JSON object, bounded by maxBodyBytes', async () => {
    const guard = new RequestGuard({ maxBodyBytes: 32 });
    expect(await guard.act(request(json, { body: '{"text":"héllo"}' }), act)).toEqual({
      text: 'héllo',
    });
    await expect(
      guard.act(request(json, { body: JSON.stringify({ text: 'x'.repeat(40) }) }), act),
    ).rejects.toMatchObject({ status: 413, reason: 'too-large' });
    expect(await guard.act(request(json, { body: '' }), act, { optional: true })).toEqual({});
  });
});
