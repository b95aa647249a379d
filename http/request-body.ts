import { HttpRefusedError } from './http-errors.ts';

/** How large a body the trust layer reads by default: 1 MiB. */
export const defaultMaxBodyBytes = 1024 * 1024;

/**
 * Reads a request's whole body as bytes, refusing it (413) past `limit` bytes: by its
 * `content-length` before reading anything, else as soon as the bytes read pass it (the rest
 * is left unread). Memory held is at most `limit` plus one chunk.
 */
export async function readBodyBytes(request: Request, limit: number): Promise<Uint8Array> {
  const declared = Number(request.headers.get('content-length') ?? Number.NaN);
  if (Number.isFinite(declared) && declared > limit) {
    await request.body?.cancel().catch(() => {});
    throw tooLarge(limit);
  }
  if (request.body === null) return new Uint8Array(0);
  if (request.bodyUsed) {
    throw new HttpRefusedError({
      reason: 'bad-request',
      message: 'The request body was already read; read it once, through the trust layer.',
    });
  }
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (let next = await reader.read(); !next.done; next = await reader.read()) {
    size += next.value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => {});
      throw tooLarge(limit);
    }
    chunks.push(next.value);
  }
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return bytes;
}

/**
 * Reads a request's body as one JSON object: the bytes gathered whole, then decoded once as
 * UTF-8 (a character split across network chunks arrives intact; bytes that are not UTF-8 are
 * a 400, never U+FFFD in the log). An empty body is `{}` when `optional`.
 *
 * @example
 * const { text } = await readJsonBody(request, { limit: 64 * 1024 });
 */
export async function readJsonBody(
  request: Request,
  { limit = defaultMaxBodyBytes, optional = false }: { limit?: number; optional?: boolean } = {},
): Promise<Record<string, unknown>> {
  const bytes = await readBodyBytes(request, limit);
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw badRequest('The body is not valid UTF-8; send JSON encoded as UTF-8.');
  }
  if (text.trim() === '' && optional) return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw badRequest('The body must be JSON.');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw badRequest('The body must be a JSON object.');
  }
  return value as Record<string, unknown>;
}

/**
 * Decodes one percent-encoded path segment (a session id in `/sessions/:id/…`); a bad
 * encoding (`%E0%A4%A`, a lone `%`) is a 400 `HttpRefusedError`, never a `URIError`.
 */
export function decodePathSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw badRequest(`The path segment "${segment}" is not valid percent-encoded UTF-8.`);
  }
}

function badRequest(message: string) {
  return new HttpRefusedError({ reason: 'bad-request', message });
}

function tooLarge(limit: number) {
  return new HttpRefusedError({
    reason: 'too-large',
    message: `The body is over ${limit} bytes; send less, or raise maxBodyBytes.`,
  });
}
