import type { JsonValue } from '../events/json.ts';

/** The outcome of `copyPlainJson`: a detached copy, or where and why the value is not JSON. */
export type PlainJsonCopy =
  | { ok: true; value: JsonValue }
  | { ok: false; path: string; problem: string };

/**
 * Copies a value that must be plain JSON, refusing anything `JSON.stringify` would change or
 * lose: functions, symbols, bigints, non-finite numbers, class instances (`Date`, `Map`, …),
 * `undefined` or holes in arrays, and cycles. An `undefined` object property is dropped, as
 * `JSON.stringify` does, so a stored value always equals its JSON round trip.
 *
 * @example
 * copyPlainJson({ a: 1, b: undefined }); // { ok: true, value: { a: 1 } }
 * copyPlainJson({ at: someDate }); // { ok: false, path: '$.at', problem: 'is a Date, not plain JSON' }
 */
export function copyPlainJson(value: unknown): PlainJsonCopy {
  const failure: { path: string; problem: string }[] = [];
  const copy = copyValue(value, '$', new Set(), failure);
  const first = failure[0];
  return first === undefined ? { ok: true, value: copy as JsonValue } : { ok: false, ...first };
}

function copyValue(
  value: unknown,
  path: string,
  ancestors: Set<object>,
  failure: { path: string; problem: string }[],
): unknown {
  if (failure.length > 0) return undefined;
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      if (!Number.isFinite(value)) failure.push({ path, problem: `is ${value}, not plain JSON` });
      // JSON has no negative zero; store what a round trip would give back.
      return value === 0 ? 0 : value;
    case 'object':
      if (value === null) return null;
      return copyObject(value, path, ancestors, failure);
    default:
      failure.push({ path, problem: `is a ${typeof value}, not plain JSON` });
      return undefined;
  }
}

function copyObject(
  value: object,
  path: string,
  ancestors: Set<object>,
  failure: { path: string; problem: string }[],
): unknown {
  if (ancestors.has(value)) {
    failure.push({ path, problem: 'is a circular reference' });
    return undefined;
  }
  ancestors.add(value);
  try {
    if (Array.isArray(value)) {
      const items: unknown[] = [];
      for (let index = 0; index < value.length; index += 1) {
        const itemPath = `${path}[${index}]`;
        if (!(index in value) || value[index] === undefined) {
          failure.push({ path: itemPath, problem: 'is undefined (JSON would turn it into null)' });
          return undefined;
        }
        items.push(copyValue(value[index], itemPath, ancestors, failure));
      }
      return items;
    }
    const prototype = Object.getPrototypeOf(value);
    if (prototype !== Object.prototype && prototype !== null) {
      const kind = (value as { constructor?: { name?: string } }).constructor?.name ?? 'object';
      failure.push({ path, problem: `is a ${kind}, not plain JSON` });
      return undefined;
    }
    const copy: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) {
      if (item === undefined) continue;
      setOwn(copy, key, copyValue(item, `${path}.${key}`, ancestors, failure));
    }
    return copy;
  } finally {
    ancestors.delete(value);
  }
}

/**
 * Deep-copies a value known to be plain JSON (a stored fact), faster than `structuredClone`.
 * Callers get their own copy, so mutating it never changes the store.
 */
export function cloneJson<TValue>(value: TValue): TValue {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) return value.map(cloneJson) as TValue;
  const copy: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    setOwn(copy, key, cloneJson((value as Record<string, unknown>)[key]));
  }
  return copy as TValue;
}

function setOwn(target: Record<string, unknown>, key: string, item: unknown): void {
  // A parsed `"__proto__"` key is data; plain assignment would change the prototype instead.
  if (key === '__proto__') {
    Object.defineProperty(target, key, {
      value: item,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  } else {
    target[key] = item;
  }
}
