import type { JsonValue } from '../events/json.ts';

/**
 * Strings at least this long that a tool did not declare as secrets are still treated as ones
 * where they may be: raw input strings in schema messages, `runCommand`'s `env` values. Shorter
 * ones are left (redacting `1` would garble every number, and so short a secret protects little).
 */
export const minRedactedLength = 8;

/** The most JSON characters of a tool's return value kept as `output` in `tool.settled`. */
export const maxStoredOutputChars = 16_384;

/** The model-visible text of one result, and the JSON value kept beside it when small. */
export interface ToolOutputText {
  text: string;
  truncated: boolean;
  /** The returned value when it is plain JSON of at most `maxStoredOutputChars`; else absent. */
  output?: JsonValue;
}

/**
 * Turns what `execute` returned into the text the model sees: strings as they are, other
 * values as JSON, `undefined` as "(no output)"; secrets redacted, then truncated to `maxChars`.
 */
export function formatToolOutput({
  value,
  maxChars,
  secrets = [],
}: {
  value: unknown;
  maxChars: number;
  secrets?: readonly string[];
}): ToolOutputText {
  const redacted = redactSecrets(stringifyOutput(value), secrets);
  const { text, truncated } = truncateText(redacted, maxChars);
  const result: ToolOutputText = { text, truncated };
  const output = storableOutput(value, secrets);
  if (output !== undefined) result.output = output;
  return result;
}

/**
 * Cuts `text` to at most `maxChars` characters, keeping its head and tail around a marker that
 * says how much was cut (command output usually ends with what matters).
 */
export function truncateText(text: string, maxChars: number): { text: string; truncated: boolean } {
  if (text.length <= maxChars) return { text, truncated: false };
  let kept = Math.max(0, maxChars - truncationMarker(text.length).length);
  // The marker's length depends on the number it prints; settle it in two passes.
  kept = Math.max(0, maxChars - truncationMarker(text.length - kept).length);
  const headLength = headEnd(text, Math.ceil(kept * 0.6));
  const tailStart = tailBegin(text, text.length - (kept - headLength));
  const cut = tailStart - headLength;
  return {
    text: `${text.slice(0, headLength)}${truncationMarker(cut)}${text.slice(tailStart)}`,
    truncated: true,
  };
}

/** The marker put where text was cut. */
export function truncationMarker(cutChars: number): string {
  return `\n[… ${cutChars} characters cut here. Do not re-run commands with side effects just to see them; ask for less output instead (a smaller range, a filter).]\n`;
}

/** What a tool's `secrets` function gave for one call, or why it gave nothing usable. */
export type ToolSecrets =
  | { readable: true; secrets: string[] }
  /** `problem` names what went wrong without the thrown message, which may hold a secret. */
  | { readable: false; problem: string };

/**
 * Calls a tool's `secrets` function (`read`) and checks what it returned. Fails closed: a throw,
 * or anything but an array of strings (`undefined` and `null` items mean "no secret": an unset
 * environment variable), is `readable: false`, and every text of the call that came from the
 * tool must then be withheld, since it cannot be redacted.
 */
export function readSecrets(read: () => unknown): ToolSecrets {
  let value: unknown;
  try {
    value = read();
  } catch {
    return { readable: false, problem: 'secrets() threw' };
  }
  if (!Array.isArray(value)) {
    return { readable: false, problem: `secrets() returned ${describeType(value)}, not an array` };
  }
  const secrets: string[] = [];
  for (const item of value) {
    if (typeof item === 'string') secrets.push(item);
    else if (item !== undefined && item !== null) {
      return {
        readable: false,
        problem: `secrets() returned an array holding ${describeType(item)}, not only strings`,
      };
    }
  }
  return { readable: true, secrets };
}

/**
 * A thrown value's message as the model and the log may see it: redacted of the tool's
 * secrets, or a note that it was withheld when they could not be read.
 */
export function redactedMessage(error: unknown, secrets: ToolSecrets): string {
  return secrets.readable
    ? redactSecrets(errorMessage(error), secrets.secrets)
    : withheldNote('its message is', secrets);
}

/**
 * Says why a tool's text is withheld, e.g. `(its message is withheld: without the tool's
 * secrets (secrets() threw) nothing can be redacted)`.
 */
export function withheldNote(what: string, secrets: { problem: string }): string {
  return `(${what} withheld: without the tool's secrets (${secrets.problem}) nothing can be redacted)`;
}

/** Replaces every occurrence of each non-empty secret with `[redacted]`, longest first. */
export function redactSecrets(text: string, secrets: readonly string[]): string {
  let result = text;
  const ordered = secrets
    .filter((secret) => typeof secret === 'string' && secret !== '')
    .sort((a, b) => b.length - a.length);
  for (const secret of ordered) result = result.split(secret).join('[redacted]');
  return result;
}

/** A thrown value's message: `Error.message`, a string as it is, anything else as JSON. */
export function errorMessage(error: unknown): string {
  try {
    if (error instanceof Error) return String(error.message || error.name);
    if (typeof error === 'string') return error;
    return JSON.stringify(error) ?? String(error);
  } catch {
    return safeString(error);
  }
}

/** True for values that survive `JSON.stringify` → `JSON.parse` unchanged. */
export function isPlainJson(value: unknown, depth = 0): value is JsonValue {
  if (depth > 64) return false;
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return true;
  if (typeof value === 'number') return Number.isFinite(value);
  if (Array.isArray(value)) return value.every((item) => isPlainJson(item, depth + 1));
  if (typeof value !== 'object') return false;
  const prototype = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) return false;
  return Object.values(value).every((item) => isPlainJson(item, depth + 1));
}

function stringifyOutput(value: unknown): string {
  if (value === undefined) return '(no output)';
  if (typeof value === 'string') return value;
  try {
    const json = JSON.stringify(value);
    if (json !== undefined) return json;
  } catch {
    // A cycle or a bigint: fall back to the value's own string form.
  }
  return safeString(value);
}

function describeType(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

/** `String(value)`, or a placeholder for a value that refuses to become a string. */
function safeString(value: unknown): string {
  try {
    return String(value);
  } catch {
    return `(a value of type ${typeof value} that cannot be shown as text)`;
  }
}

function storableOutput(value: unknown, secrets: readonly string[]): JsonValue | undefined {
  try {
    if (value === undefined || !isPlainJson(value)) return undefined;
    const json = JSON.stringify(value);
    if (json.length > maxStoredOutputChars) return undefined;
    if (redactSecrets(json, secrets) !== json) return undefined;
    // A copy: the tool may keep and change the object it returned.
    return JSON.parse(json) as JsonValue;
  } catch {
    // A getter or proxy that throws: the value is not plain data.
    return undefined;
  }
}

/** Moves the end of the kept head back off the middle of a surrogate pair. */
function headEnd(text: string, index: number): number {
  const code = text.charCodeAt(index - 1);
  return code >= 0xd800 && code <= 0xdbff ? index - 1 : index;
}

/** Moves the start of the kept tail forward off the middle of a surrogate pair. */
function tailBegin(text: string, index: number): number {
  const code = text.charCodeAt(index);
  return code >= 0xdc00 && code <= 0xdfff ? index + 1 : index;
}
