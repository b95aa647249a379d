import { assertNever, type ProviderFailure, type ProviderFailureKind } from '../events/facts.ts';

/** Options of {@link classifyProviderError}. */
export interface ClassifyOptions {
  /** Whether any text, reasoning or tool-input byte had streamed before the failure. */
  observedOutput: boolean;
  /** Whether the caller aborted the request (a stop, not a provider failure). */
  aborted: boolean;
  /** Current time in ms since the epoch, for `Retry-After` HTTP dates. Defaults to `Date.now`. */
  now?: () => number;
}

/** Longest message kept in a failure; provider bodies can be large. */
const maxMessageLength = 500;

const contextOverflowCodes = new Set([
  'context_length_exceeded',
  'context_window_exceeded',
  'model_context_window_exceeded',
  'string_above_max_length',
]);
const quotaCodes = new Set(['insufficient_quota', 'billing_hard_limit_reached', 'quota_exceeded']);
const authCodes = new Set([
  'invalid_api_key',
  'authentication_error',
  'permission_error',
  'permission_denied',
  'unauthenticated',
  'unauthorized',
]);
const rateLimitCodes = new Set(['rate_limit_exceeded', 'rate_limit_error', 'resource_exhausted']);
const overloadedCodes = new Set([
  'overloaded_error',
  'server_overloaded',
  'overloaded',
  'unavailable',
]);
const contentFilterCodes = new Set(['content_filter', 'content_policy_violation', 'safety']);
const networkCodes = new Set([
  'econnreset',
  'econnrefused',
  'econnaborted',
  'epipe',
  'enotfound',
  'eai_again',
  'etimedout',
  'ehostunreach',
  'enetunreach',
]);

/** Messages are the last resort: only consulted when codes and status left the kind generic. */
const messagePatterns: [RegExp, ProviderFailureKind][] = [
  [/insufficient.?quota|exceeded your current quota|billing/i, 'quota'],
  [
    /maximum context length|context.?length|context window|prompt is too long|too many (input )?tokens|exceeds the maximum number of tokens|input token count .*exceeds|reduce the length of the messages/i,
    'context_overflow',
  ],
  [/rate.?limit|too many requests/i, 'rate_limit'],
  [/overloaded/i, 'overloaded'],
  [/content.?(management )?polic|content.?filter|responsible ai/i, 'content_filter'],
  [/invalid api key|incorrect api key|unauthori[sz]ed|api key not valid/i, 'auth'],
  [
    /fetch failed|\bterminated\b|socket hang up|other side closed|econnreset|network error/i,
    'network',
  ],
  [/timed? ?out|timeout/i, 'timeout'],
];

/**
 * Classifies a provider failure into the kinds of architecture/model-adapter.md ("Provider errors"), with `retryable` and `retryAfterMs`.
 * Structured fields (status, `code`, `type`, error names, socket error codes anywhere in the
 * cause chain, a JSON response body) decide first; the message only refines a generic result.
 * The kept message is capped and stripped of anything that looks like an API key.
 *
 * @example
 * classifyProviderError(apiCallError429, { observedOutput: false, aborted: false });
 * // { kind: 'rate_limit', retryable: true, message: '…', status: 429, retryAfterMs: 2000 }
 */
export function classifyProviderError(error: unknown, options: ClassifyOptions): ProviderFailure {
  const facts = collectFacts(error);
  const status = facts.statuses[0];
  const retryAfterMs = findRetryAfterMs(facts, options.now ?? Date.now);
  const failure = (kind: ProviderFailureKind, retryable = defaultRetryable(kind, status)) => {
    const result: ProviderFailure = { kind, retryable, message: messageFor(kind, facts, error) };
    if (status !== undefined) result.status = status;
    if (retryAfterMs !== undefined && retryable) result.retryAfterMs = retryAfterMs;
    return result;
  };

  if (options.aborted || facts.names.has('aborterror')) return failure('aborted', false);
  const structured = classifyStructured(facts, status);
  if (structured !== undefined && structured !== 'bad_request' && structured !== 'unknown') {
    return failure(adjustForOutput(structured, options.observedOutput));
  }
  const fromMessage = classifyMessages(facts.messages);
  if (fromMessage !== undefined && (structured === undefined || fromMessage !== 'network')) {
    return failure(adjustForOutput(fromMessage, options.observedOutput));
  }
  if (structured !== undefined) return failure(structured);
  return failure('unknown', facts.retryableFlag === true);
}

/** The provider's message; for a broken connection, with its causes (`terminated: other side closed`). */
function messageFor(kind: ProviderFailureKind, facts: ErrorFacts, error: unknown): string {
  const [first] = facts.messages;
  if (first === undefined) return sanitizeMessage(describe(error));
  if (kind !== 'network' && kind !== 'stream_interrupted') return sanitizeMessage(first);
  return sanitizeMessage([...new Set(facts.messages)].slice(0, 3).join(': '));
}

/** The failure of a stream that ended without a finish (or with an `error`/`interrupted` one). */
export function streamInterruptedFailure(message: string): ProviderFailure {
  return { kind: 'stream_interrupted', retryable: true, message: sanitizeMessage(message) };
}

/** Removes anything that looks like an API key and caps the length. */
export function sanitizeMessage(message: string): string {
  const redacted = message
    .replace(/\b(?:sk|rk|pk|sk-ant|sk-proj|xai|gsk)[-_][A-Za-z0-9_-]{8,}/g, '[redacted]')
    .replace(/\bAIza[0-9A-Za-z_-]{20,}/g, '[redacted]')
    .replace(/(Bearer\s+)[A-Za-z0-9._~+/=-]{8,}/gi, '$1[redacted]')
    .replace(/([?&](?:key|api_key|apikey|access_token)=)[^&\s"']+/gi, '$1[redacted]')
    .replace(
      /((?:api[_-]?key|x-api-key|authorization)"?\s*[:=]\s*"?)[^"\s,}]{8,}/gi,
      '$1[redacted]',
    )
    .trim();
  return redacted.length > maxMessageLength
    ? `${redacted.slice(0, maxMessageLength - 1)}…`
    : redacted || 'The provider request failed without a message.';
}

interface ErrorFacts {
  statuses: number[];
  codes: Set<string>;
  /** Lower-cased error names, and the AI SDK error classes found by their markers. */
  names: Set<string>;
  messages: string[];
  headers: Record<string, string>[];
  retryDelays: string[];
  retryableFlag: boolean | undefined;
}

/** Walks the error, its causes, `data`, nested `error` objects and JSON bodies, breadth first. */
function collectFacts(error: unknown): ErrorFacts {
  const facts: ErrorFacts = {
    statuses: [],
    codes: new Set(),
    names: new Set(),
    messages: [],
    headers: [],
    retryDelays: [],
    retryableFlag: undefined,
  };
  const queue: unknown[] = [error];
  const seen = new Set<unknown>();
  while (queue.length > 0 && seen.size < 40) {
    const value = queue.shift();
    if (typeof value === 'string') {
      const parsed = parseJson(value);
      if (parsed !== undefined) queue.push(parsed);
      continue;
    }
    if (typeof value !== 'object' || value === null || seen.has(value)) continue;
    seen.add(value);
    const record = value as Record<string, unknown>;
    for (const key of ['statusCode', 'status', 'status_code', 'code']) {
      const status = asStatus(record[key]);
      if (status !== undefined && !facts.statuses.includes(status)) facts.statuses.push(status);
    }
    for (const key of ['code', 'type', 'status', 'reason', 'errno']) {
      const code = record[key];
      if (typeof code === 'string' && code.length > 0) facts.codes.add(code.toLowerCase());
    }
    if (typeof record.name === 'string') facts.names.add(record.name.toLowerCase());
    for (const marked of aiSdkErrorClasses(value)) facts.names.add(marked.toLowerCase());
    if (typeof record.message === 'string' && record.message.length > 0) {
      facts.messages.push(record.message);
    }
    if (typeof record.isRetryable === 'boolean') facts.retryableFlag ??= record.isRetryable;
    if (typeof record.retryDelay === 'string') facts.retryDelays.push(record.retryDelay);
    if (isStringRecord(record.responseHeaders)) facts.headers.push(record.responseHeaders);
    if (Array.isArray(record.details)) queue.push(...record.details);
    if (Array.isArray(record.errors)) queue.push(...[...record.errors].reverse());
    queue.push(
      record.lastError,
      record.error,
      record.data,
      record.cause,
      record.response,
      record.responseBody,
    );
  }
  return facts;
}

function classifyStructured(
  facts: ErrorFacts,
  status: number | undefined,
): ProviderFailureKind | undefined {
  const has = (codes: Set<string>) => [...facts.codes].some((code) => codes.has(code));
  const hasName = (...names: string[]) => names.some((name) => facts.names.has(name));
  if (has(quotaCodes) || status === 402) return 'quota';
  if (has(contextOverflowCodes)) return 'context_overflow';
  if (has(contentFilterCodes)) return 'content_filter';
  if (status === 401 || status === 403 || has(authCodes)) return 'auth';
  if (status === 429 || has(rateLimitCodes)) return 'rate_limit';
  if (status === 408 || hasName('timeouterror')) return 'timeout';
  if (status === 503 || status === 529 || has(overloadedCodes)) return 'overloaded';
  if (status === 504) return 'timeout';
  if (status !== undefined && status >= 500) return 'unknown';
  if (status === 409) return 'unknown';
  if (status !== undefined && status >= 400) return 'bad_request';
  if (has(networkCodes) || [...facts.codes].some((code) => code.startsWith('und_err_'))) {
    return 'network';
  }
  // The stream ended early or carried data the provider package could not use: every package
  // says so with one of these classes (`@ai-sdk/openai-compatible`'s body that ends without a
  // finish is an `InvalidResponseDataError`).
  if (hasName(...malformedStreamErrors)) return 'stream_interrupted';
  return undefined;
}

/**
 * AI SDK error classes that mean the response stream ended early or could not be read, as the
 * lower-cased names their markers and `name` carry.
 */
const malformedStreamErrors = [
  'ai_nooutputgeneratederror',
  'ai_jsonparseerror',
  'ai_typevalidationerror',
  'ai_invalidresponsedataerror',
  'ai_emptyresponsebodyerror',
];

/**
 * The AI SDK error classes `value` is an instance of, read from their markers
 * (`Symbol.for('vercel.ai.error.AI_…')`), which hold across copies of the SDK packages where
 * `instanceof` does not.
 */
function aiSdkErrorClasses(value: object): string[] {
  const classes: string[] = [];
  for (const symbol of Object.getOwnPropertySymbols(value)) {
    const key = Symbol.keyFor(symbol);
    if (key?.startsWith(aiSdkMarkerPrefix) && (value as Record<symbol, unknown>)[symbol] === true) {
      classes.push(key.slice(aiSdkMarkerPrefix.length));
    }
  }
  return classes;
}

const aiSdkMarkerPrefix = 'vercel.ai.error.';

function classifyMessages(messages: string[]): ProviderFailureKind | undefined {
  for (const message of messages) {
    for (const [pattern, kind] of messagePatterns) {
      if (pattern.test(message)) return kind;
    }
  }
  return undefined;
}

/** A connection that broke after output streamed is an interrupted stream, not a network error. */
function adjustForOutput(kind: ProviderFailureKind, observedOutput: boolean): ProviderFailureKind {
  return kind === 'network' && observedOutput ? 'stream_interrupted' : kind;
}

function defaultRetryable(kind: ProviderFailureKind, status: number | undefined): boolean {
  switch (kind) {
    case 'rate_limit':
    case 'overloaded':
    case 'timeout':
    case 'network':
    case 'stream_interrupted':
      return true;
    case 'auth':
    case 'quota':
    case 'bad_request':
    case 'context_overflow':
    case 'aborted':
    case 'content_filter':
    case 'malformed_tool_call':
      return false;
    case 'unknown':
      return status !== undefined && (status === 408 || status === 409 || status >= 500);
    default:
      return assertNever(kind, 'failure kind');
  }
}

function findRetryAfterMs(facts: ErrorFacts, now: () => number): number | undefined {
  for (const headers of facts.headers) {
    const milliseconds = Number.parseFloat(header(headers, 'retry-after-ms') ?? '');
    if (Number.isFinite(milliseconds) && milliseconds >= 0) return Math.round(milliseconds);
    const retryAfter = header(headers, 'retry-after')?.trim();
    if (retryAfter === undefined || retryAfter === '') continue;
    if (/^\d+(\.\d+)?$/.test(retryAfter)) return Math.round(Number(retryAfter) * 1000);
    const date = Date.parse(retryAfter);
    if (Number.isFinite(date)) return Math.max(0, date - now());
  }
  for (const delay of facts.retryDelays) {
    // google.rpc.RetryInfo: "12s", "1.5s"
    const match = /^(\d+(?:\.\d+)?)s$/.exec(delay.trim());
    if (match?.[1] !== undefined) return Math.round(Number(match[1]) * 1000);
  }
  return undefined;
}

function header(headers: Record<string, string>, name: string): string | undefined {
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() === name) return value;
  }
  return undefined;
}

function asStatus(value: unknown): number | undefined {
  const number = typeof value === 'string' && /^\d{3}$/.test(value) ? Number(value) : value;
  return typeof number === 'number' && Number.isInteger(number) && number >= 400 && number <= 599
    ? number
    : undefined;
}

function isStringRecord(value: unknown): value is Record<string, string> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function parseJson(text: string): unknown {
  const trimmed = text.trim();
  if (!trimmed.startsWith('{')) return undefined;
  try {
    return JSON.parse(trimmed);
  } catch {
    return undefined;
  }
}

function describe(error: unknown): string {
  if (typeof error === 'string') return error;
  if (error instanceof Error) return error.name;
  return 'The provider request failed without a message.';
}
