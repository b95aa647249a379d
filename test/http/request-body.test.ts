import { describe, expect, it } from 'vitest';
import { HttpRefusedError } from '../../http/http-errors.ts';
import { decodePathSegment, readBodyBytes, readJsonBody } from '../../http/request-body.ts';

/** A POST whose body arrives in exactly these chunks. */
function chunked(chunks: Uint8Array[], headers: Record<string, string> = {}): Request {
  let index = 0;
  let pulled = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      pulled += 1;
      const chunk = chunks[index++];
      if (chunk === undefined) controller.close();
      else controller.enqueue(chunk);
    },
  });
  const request = new Request('http://127.0.0.1/x', {
    method: 'POST',
    headers,
    body,
    duplex: 'half',
  } as RequestInit);
  Object.defineProperty(request, 'pulled', { get: () => pulled });
  return request;
}

describe('readJsonBody', () => {
  it('keeps a multi-byte character split across chunks, byte by byte', async () => {
    const bytes = new TextEncoder().encode(JSON.stringify({ text: 'é€𝄞 ok' }));
    const chunks = [...bytes].map((byte) => Uint8Array.of(byte));
    expect(await readJsonBody(chunked(chunks))).toEqual({ text: 'é€𝄞 ok' });
  });

  it('refuses bytes that are not UTF-8 (400), never turning them into U+FFFD', async () => {
    const bad = Uint8Array.of(
      ...new TextEncoder().encode('{"text":"a'),
      0xe2,
      0x82,
      ...new TextEncoder().encode('"}'),
    );
    await expect(readJsonBody(chunked([bad]))).rejects.toMatchObject({
      name: 'HttpRefusedError',
      status: 400,
      message: 'The body is not valid UTF-8; send JSON encoded as UTF-8.',
    });
  });

  it.each([
    ['not json', 'The body must be JSON.'],
    ['[1,2]', 'The body must be a JSON object.'],
    ['null', 'The body must be a JSON object.'],
    ['', 'The body must be JSON.'],
  ])('refuses %j with 400: %s', async (text, message) => {
    await expect(readJsonBody(chunked([new TextEncoder().encode(text)]))).rejects.toMatchObject({
      status: 400,
      message,
    });
  });

  it('reads an empty optional body as {}', async () => {
    expect(await readJsonBody(chunked([]), { optional: true })).toEqual({});
  });

  it('refuses a body over the limit by its content-length before reading a byte', async () => {
    const request = chunked([new Uint8Array(10)], { 'content-length': '101' });
    await expect(readBodyBytes(request, 100)).rejects.toMatchObject({
      status: 413,
      reason: 'too-large',
    });
    expect((request as unknown as { pulled: number }).pulled).toBe(0);
  });

  it('stops reading a body without content-length as soon as it passes the limit', async () => {
    const chunks = Array.from({ length: 100 }, () => new Uint8Array(10));
    const request = chunked(chunks);
    const error = await readBodyBytes(request, 35).catch((caught: unknown) => caught);
    expect(HttpRefusedError.isInstance(error) && error.status).toBe(413);
    // Four chunks pulled (40 bytes > 35), not the 1,000 bytes offered; the stream may pull one ahead.
    expect((request as unknown as { pulled: number }).pulled).toBeLessThanOrEqual(5);
  });

  it('reads a body of exactly the limit', async () => {
    expect(
      (await readBodyBytes(chunked([new Uint8Array(60), new Uint8Array(40)]), 100)).byteLength,
    ).toBe(100);
  });
});

describe('decodePathSegment', () => {
  it('decodes a percent-encoded segment', () => {
    expect(decodePathSegment('s%C3%A9ance%2F1')).toBe('séance/1');
  });

  it.each(['%', '%E0%A4%A', '%ZZ', 'a%C3', '%ED%A0%80'])(
    'answers %s with a 400 HttpRefusedError, not a URIError',
    (segment) => {
      const error = (() => {
        try {
          decodePathSegment(segment);
        } catch (caught) {
          return caught;
        }
      })();
      expect(HttpRefusedError.isInstance(error)).toBe(true);
      expect(error).toMatchObject({ status: 400, reason: 'bad-request' });
    },
  );
});
