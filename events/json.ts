import { createHash } from 'node:crypto';

/** A value that survives `JSON.stringify` → `JSON.parse` unchanged. */
export type JsonValue =
  | string
  | number
  | boolean
  | null
  | JsonValue[]
  | { [key: string]: JsonValue };

/** A JSON object. */
export type JsonObject = { [key: string]: JsonValue };

/**
 * Provider-specific options kept on content parts (reasoning signatures, Gemini thought
 * signatures), keyed by provider: `{ openai: { itemId: '…' } }`.
 */
export type ProviderOptions = Record<string, JsonObject>;

/**
 * JSON with object keys sorted, so equal values always give equal text (and equal hashes).
 * `undefined` object properties are skipped, as `JSON.stringify` does.
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value !== null && typeof value === 'object') {
    const sorted: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) {
      const item = sortKeys((value as Record<string, unknown>)[key]);
      // A parsed "__proto__" key is data: assigning it would set the prototype and drop the key.
      if (key === '__proto__') {
        Object.defineProperty(sorted, key, { value: item, enumerable: true, writable: true });
      } else {
        sorted[key] = item;
      }
    }
    return sorted;
  }
  return value;
}

/**
 * A short, stable hash of a JSON value: `sha256:` and the first 32 hex digits of the SHA-256
 * of its canonical JSON. Used to bind permission decisions to an exact tool input, and to
 * identify a request body in `step.started`.
 */
export function hashJson(value: unknown): string {
  return hashText(canonicalJson(value));
}

/**
 * The same short hash of a text. For a value built by code (not received from outside), hashing
 * its plain `JSON.stringify` skips the key sorting, which dominates on large values such as a
 * request's whole history.
 */
export function hashText(text: string): string {
  return `sha256:${createHash('sha256').update(text).digest('hex').slice(0, 32)}`;
}
