import {
  APICallError,
  EmptyResponseBodyError,
  InvalidResponseDataError,
  JSONParseError,
  TypeValidationError,
} from '@ai-sdk/provider';
import { NoOutputGeneratedError, RetryError } from 'ai';
import { describe, expect, it } from 'vitest';
import {
  classifyProviderError,
  sanitizeMessage,
  streamInterruptedFailure,
} from '../../adapters/provider-error.ts';

const before = { observedOutput: false, aborted: false };
const after = { observedOutput: true, aborted: false };

function httpError(
  statusCode: number,
  body: unknown = { error: { message: `HTTP ${statusCode}` } },
  responseHeaders: Record<string, string> = {},
) {
  return new APICallError({
    message: (body as { error?: { message?: string } }).error?.message ?? `HTTP ${statusCode}`,
    url: 'https://api.example.test/v1/responses',
    requestBodyValues: {},
    statusCode,
    responseHeaders,
    responseBody: JSON.stringify(body),
  });
}

function socketError(code: string, message = 'terminated') {
  return new TypeError(message, { cause: Object.assign(new Error(`read ${code}`), { code }) });
}

describe('classifyProviderError', () => {
  it.each([
    [401, 'auth', false],
    [403, 'auth', false],
    [402, 'quota', false],
    [429, 'rate_limit', true],
    [408, 'timeout', true],
    [409, 'unknown', true],
    [500, 'unknown', true],
    [503, 'overloaded', true],
    [529, 'overloaded', true],
    [504, 'timeout', true],
    [400, 'bad_request', false],
    [404, 'bad_request', false],
  ])('classifies HTTP %i as %s (retryable: %s)', (status, kind, retryable) => {
    expect(classifyProviderError(httpError(status), before)).toEqual({
      kind,
      retryable,
      status,
      message: `HTTP ${status}`,
    });
  });

  it('classifies insufficient_quota as quota even though it arrives as a 429', () => {
    const error = httpError(429, {
      error: {
        message: 'You exceeded your current quota',
        type: 'insufficient_quota',
        code: 'insufficient_quota',
      },
    });
    expect(classifyProviderError(error, before)).toMatchObject({
      kind: 'quota',
      retryable: false,
      status: 429,
    });
  });

  it('classifies insufficient_quota inside a raw stream error part', () => {
    const part = {
      type: 'error',
      sequence_number: 2,
      error: {
        type: 'insufficient_quota',
        code: 'insufficient_quota',
        message: 'You exceeded your current quota',
      },
    };
    expect(classifyProviderError(part, before)).toEqual({
      kind: 'quota',
      retryable: false,
      message: 'You exceeded your current quota',
    });
  });

  it('matches structured fields before messages', () => {
    const error = httpError(401, { error: { message: 'rate limit exceeded for this key' } });
    expect(classifyProviderError(error, before).kind).toBe('auth');
  });

  it.each([
    ['an OpenAI code', { error: { message: 'Too long', code: 'context_length_exceeded' } }],
    [
      'an Anthropic message',
      {
        type: 'error',
        error: {
          type: 'invalid_request_error',
          message: 'prompt is too long: 208000 tokens > 200000 maximum',
        },
      },
    ],
    [
      'an OpenAI message',
      { error: { message: "This model's maximum context length is 8192 tokens" } },
    ],
    [
      'a Gemini message',
      {
        error: {
          status: 'INVALID_ARGUMENT',
          message:
            'The input token count (1048577) exceeds the maximum number of tokens allowed (1048576).',
        },
      },
    ],
  ])('classifies %s as context_overflow, not retryable', (_label, body) => {
    expect(classifyProviderError(httpError(400, body), before)).toMatchObject({
      kind: 'context_overflow',
      retryable: false,
      status: 400,
    });
  });

  it('classifies a content filter error as content_filter', () => {
    const error = httpError(400, {
      error: { code: 'content_filter', message: 'The response was filtered' },
    });
    expect(classifyProviderError(error, before)).toMatchObject({
      kind: 'content_filter',
      retryable: false,
    });
  });

  it('reads retry-after-ms first, then Retry-After seconds, then an HTTP date', () => {
    const now = () => Date.parse('2026-01-01T00:00:00Z');
    const classify = (headers: Record<string, string>) =>
      classifyProviderError(httpError(429, undefined, headers), { ...before, now }).retryAfterMs;
    expect(classify({ 'retry-after-ms': '1500', 'retry-after': '9' })).toBe(1500);
    expect(classify({ 'Retry-After': '2' })).toBe(2000);
    expect(classify({ 'retry-after': 'Thu, 01 Jan 2026 00:00:30 GMT' })).toBe(30_000);
    expect(classify({ 'retry-after': 'Wed, 31 Dec 2025 23:59:00 GMT' })).toBe(0);
    expect(classify({})).toBeUndefined();
  });

  it('keeps no retry delay on a failure that is not retryable', () => {
    const failure = classifyProviderError(
      httpError(401, undefined, { 'retry-after': '5' }),
      before,
    );
    expect(failure).not.toHaveProperty('retryAfterMs');
  });

  it('classifies an abort as aborted, never retryable', () => {
    const abort = new DOMException('This operation was aborted', 'AbortError');
    expect(classifyProviderError(abort, after)).toMatchObject({
      kind: 'aborted',
      retryable: false,
    });
    expect(classifyProviderError(httpError(503), { ...after, aborted: true })).toMatchObject({
      kind: 'aborted',
      retryable: false,
    });
  });

  it('classifies a timeout the caller did not ask for as a retryable timeout', () => {
    const timeout = new DOMException('The operation timed out', 'TimeoutError');
    expect(classifyProviderError(timeout, before)).toMatchObject({
      kind: 'timeout',
      retryable: true,
    });
  });

  it.each(['ECONNRESET', 'UND_ERR_SOCKET', 'ECONNREFUSED', 'UND_ERR_CONNECT_TIMEOUT'])(
    'classifies a %s socket failure as network before output and stream_interrupted after',
    (code) => {
      expect(classifyProviderError(socketError(code, 'fetch failed'), before)).toEqual({
        kind: 'network',
        retryable: true,
        message: `fetch failed: read ${code}`,
      });
      expect(classifyProviderError(socketError(code), after)).toMatchObject({
        kind: 'stream_interrupted',
        retryable: true,
      });
    },
  );

  it('falls back to the message for a bare "terminated" error', () => {
    expect(classifyProviderError(new TypeError('terminated'), after)).toEqual({
      kind: 'stream_interrupted',
      retryable: true,
      message: 'terminated',
    });
  });

  it('classifies the last error of a RetryError', () => {
    const error = new RetryError({
      message: 'Failed after 3 attempts',
      reason: 'maxRetriesExceeded',
      errors: [httpError(500), httpError(401)],
    });
    expect(classifyProviderError(error, before)).toMatchObject({ kind: 'auth', status: 401 });
  });

  it('classifies an unrecognised error as unknown and not retryable', () => {
    expect(classifyProviderError(new Error('something odd'), before)).toEqual({
      kind: 'unknown',
      retryable: false,
      message: 'something odd',
    });
  });

  it.each([
    [
      "@ai-sdk/openai-compatible's body that ended without a finish",
      new InvalidResponseDataError({
        data: undefined,
        message: 'Response stream ended without a finish reason.',
      }),
    ],
    ['an empty response body', new EmptyResponseBodyError()],
    ['a stream without a finish chunk (ai)', new NoOutputGeneratedError()],
    ['an unparsable frame', new JSONParseError({ text: '{"trunc', cause: new Error('end') })],
    ['a frame of the wrong shape', new TypeValidationError({ value: {}, cause: new Error('x') })],
  ])('classifies %s as stream_interrupted, retryable, by its class marker', (_label, error) => {
    expect(classifyProviderError(error, before)).toMatchObject({
      kind: 'stream_interrupted',
      retryable: true,
    });
    // The marker decides, not the name or the message: a renamed copy is still recognised.
    const renamed = Object.assign(error, { name: 'Error', message: 'something odd' });
    expect(classifyProviderError(renamed, after)).toMatchObject({
      kind: 'stream_interrupted',
      retryable: true,
      message: expect.stringMatching(/^something odd/),
    });
  });

  it('builds the stream_interrupted failure of a stream that ended without a finish', () => {
    expect(streamInterruptedFailure('The provider stream ended without a finish.')).toEqual({
      kind: 'stream_interrupted',
      retryable: true,
      message: 'The provider stream ended without a finish.',
    });
  });
});

describe('sanitizeMessage', () => {
  it.each([
    [
      'Incorrect API key provided: sk-proj-Abc123Def456Ghi789',
      'Incorrect API key provided: [redacted]',
    ],
    ['key sk-ant-api03-abcdefghijkl rejected', 'key [redacted] rejected'],
    ['API key not valid: AIzaSyA1234567890abcdefghijklmnop', 'API key not valid: [redacted]'],
    ['header Authorization: Bearer abc.def.ghi-jkl123', 'header Authorization: Bearer [redacted]'],
    [
      'GET /v1/models?key=secret-value&alt=sse failed',
      'GET /v1/models?key=[redacted]&alt=sse failed',
    ],
  ])('removes the key from %j', (message, expected) => {
    expect(sanitizeMessage(message)).toBe(expected);
  });

  it('caps a long message at 500 characters', () => {
    const message = sanitizeMessage('x'.repeat(2000));
    expect(message).toHaveLength(500);
    expect(message.endsWith('…')).toBe(true);
  });
});
