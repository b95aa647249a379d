import { describe, expect, it } from 'vitest';
import { errorResponse, HttpAnswerError, HttpRefusedError } from '../../http/http-errors.ts';
import { NoActiveRunError, SessionBusyError } from '../../runtime-errors.ts';
import { StoreCorruptionError } from '../../store/event-store.ts';

/** `errorResponse` of `error`, with what reached `onError`. */
async function answer(error: unknown) {
  const reported: { error: unknown; errorId: string }[] = [];
  const response = errorResponse(error, {
    onError: (reportedError, { errorId }) => reported.push({ error: reportedError, errorId }),
  });
  return { status: response.status, text: await response.text(), reported };
}

describe('errorResponse: the one mapping of errors to HTTP answers', () => {
  it('answers a plain Error with a 500 that leaves its message out, and reports it with the same id', async () => {
    const secret = new Error('relation "users" does not exist: SELECT password FROM users');
    const { status, text, reported } = await answer(secret);
    expect(status).toBe(500);
    expect(text).not.toContain('password');
    expect(text).not.toContain('SELECT');
    const body = JSON.parse(text);
    expect(body).toEqual({
      error: 'InternalError',
      message: `internal error; the server logged it as ${body.errorId}`,
      errorId: expect.stringMatching(/^[0-9a-f-]{36}$/),
    });
    expect(reported).toEqual([{ error: secret, errorId: body.errorId }]);
  });

  it('answers a turnlog error not meant for the client (a store finding with a path) as a 500 without detail', async () => {
    const error = new StoreCorruptionError({
      message: '/srv/secret/.turnlog/s-1.json is damaged',
      file: '/srv/secret/.turnlog/s-1.json',
    });
    const { status, text, reported } = await answer(error);
    expect(status).toBe(500);
    expect(text).not.toContain('/srv/secret');
    expect(JSON.parse(text).error).toBe('InternalError');
    expect(reported).toHaveLength(1);
  });

  it("keeps the name and message of turnlog's errors meant for the client, and reports none", async () => {
    const busy = await answer(
      new SessionBusyError({ message: 'Session s1 is busy.', sessionId: 's1', runId: 'r1' }),
    );
    expect(busy).toEqual({
      status: 409,
      text: JSON.stringify({ error: 'SessionBusyError', message: 'Session s1 is busy.' }),
      reported: [],
    });
    const noRun = await answer(new NoActiveRunError({ message: 'No run in s2.', sessionId: 's2' }));
    expect(noRun.status).toBe(404);
    expect(JSON.parse(noRun.text)).toEqual({ error: 'NoActiveRunError', message: 'No run in s2.' });
    const refused = await answer(
      new HttpRefusedError({ reason: 'content-type', message: 'JSON only.' }),
    );
    expect(refused.status).toBe(415);
    expect(JSON.parse(refused.text)).toEqual({
      error: 'HttpRefusedError',
      reason: 'content-type',
      message: 'JSON only.',
    });
    const answered = await answer(
      new HttpAnswerError({ status: 400, name: 'BadRequest', message: '"text" is missing.' }),
    );
    expect(answered).toEqual({
      status: 400,
      text: JSON.stringify({ error: 'BadRequest', message: '"text" is missing.' }),
      reported: [],
    });
  });
});
