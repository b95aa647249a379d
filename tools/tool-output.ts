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
 * A value is redacted before it becomes JSON (every string and key), so a secret holding a
 * newline, `"` or `\` is found as it is, not in its escaped form; then the text is redacted
 * again (a secret spanning two JSON values, an escaped one inside a string).
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
  const forms = secretForms(secrets);
  const redacted = redactForms(stringifyOutput(value, forms), forms);
  const cut = truncateText(redacted, maxChars);
  // The cut joins head, marker and tail: never let that spell a secret.
  const text = holdsAny(cut.text, forms) ? redactedMarker : cut.text;
  const result: ToolOutputText = { text, truncated: cut.truncated };
  const output = storableOutput(value, forms);
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

/**
 * Replaces every occurrence of each non-empty secret, in every form it takes in text (as it is,
 * and JSON-escaped once or twice: see `secretForms`), with `[redacted]`, longest first. When a
 * form is still there afterwards (the replacement and its neighbours spelled the secret again),
 * the whole text is `[redacted]`: a secret is never let through.
 */
export function redactSecrets(text: string, secrets: readonly string[]): string {
  return redactForms(text, secretForms(secrets));
}

/** The most times a secret's JSON-escaped form is escaped again (JSON inside a JSON string). */
const maxEscapeDepth = 2;

/**
 * Every form the non-empty `secrets` take in a text, longest first: each as it is, and as it
 * reads inside a JSON string (`JSON.stringify`, quotes dropped), escaped again up to
 * `maxEscapeDepth` times (a tool that returns JSON text, shown as JSON). A secret without a
 * character JSON escapes (a quote, a backslash, a control character, a lone surrogate) has one
 * form.
 *
 * @example
 * secretForms(['a"b']); // ['a\\\"b', 'a\\"b', 'a"b']
 */
export function secretForms(secrets: readonly string[]): string[] {
  const forms = new Set<string>();
  for (const secret of secrets) {
    if (typeof secret !== 'string' || secret === '') continue;
    let form = secret;
    for (let depth = 0; depth <= maxEscapeDepth; depth += 1) {
      forms.add(form);
      form = JSON.stringify(form).slice(1, -1);
    }
  }
  return [...forms].sort((a, b) => b.length - a.length);
}

/** `text` with every form in `forms` (longest first) replaced; all of it when one survives. */
function redactForms(text: string, forms: readonly string[]): string {
  if (forms.length === 0) return text;
  let result = text;
  for (const form of forms) {
    if (result.includes(form)) result = result.split(form).join(redactedMarker);
  }
  return holdsAny(result, forms) ? redactedMarker : result;
}

const redactedMarker = '[redacted]';

function holdsAny(text: string, forms: readonly string[]): boolean {
  return forms.some((form) => text.includes(form));
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

/**
 * The value as text: strings as they are, others as JSON, with every string and object key
 * redacted of `forms` before the JSON is written (the escaped form of a secret holding a `"`
 * would otherwise not match).
 */
function stringifyOutput(value: unknown, forms: readonly string[]): string {
  if (value === undefined) return '(no output)';
  if (typeof value === 'string') return value;
  try {
    const json = JSON.stringify(value);
    if (json !== undefined) return forms.length === 0 ? json : redactJson(json, forms);
  } catch {
    // A cycle or a bigint: fall back to the value's own string form.
  }
  return safeString(value);
}

/** JSON text whose strings and keys are redacted of `forms`, read and written again. */
function redactJson(json: string, forms: readonly string[]): string {
  const redacted: unknown = JSON.parse(json, (_key, item: unknown) => {
    if (typeof item === 'string') return redactForms(item, forms);
    if (typeof item !== 'object' || item === null || Array.isArray(item)) return item;
    // fromEntries defines own properties: a `__proto__` key stays a key.
    return Object.fromEntries(
      Object.entries(item).map(([key, entry]) => [redactForms(key, forms), entry]),
    );
  });
  return JSON.stringify(redacted);
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

/** The value to keep as `output`: plain JSON, small, and holding no form of a secret. */
function storableOutput(value: unknown, forms: readonly string[]): JsonValue | undefined {
  try {
    if (value === undefined || !isPlainJson(value)) return undefined;
    const json = JSON.stringify(value);
    if (json.length > maxStoredOutputChars) return undefined;
    // Its JSON holds a secret's escaped form when a string holds the secret, and the secret
    // itself when it spans two values (`a","b":"c`).
    if (holdsAny(json, forms)) return undefined;
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
