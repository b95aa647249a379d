import { z } from 'zod';
import type { RunLimits } from './events/facts.ts';
import { idProblem } from './events/ids.ts';
import type { JsonValue } from './events/json.ts';
import { InvalidArgumentError } from './runtime-errors.ts';
import { copyPlainJson } from './store/plain-json.ts';

/**
 * The runtime's public arguments, checked at the boundary: every field's type and range, and
 * known keys only — a misspelled option (`input_hash` for `inputHash`) would otherwise be ignored
 * silently and drop what the caller asked for. A bad argument throws `InvalidArgumentError`
 * naming the field (`argument`), what was wrong and what to do; nothing is recorded.
 */

const blank = (value: string) => value.trim() === '';
const nonEmptyText = z
  .string({ error: 'must be a non-empty string' })
  .refine((value) => !blank(value), { error: 'must be a non-empty string' });
const optionalText = z.string({ error: 'must be a string when given' }).optional();
/** A session or call id: a key in the store, so well-formed UTF-16 without NUL (idProblem). */
const idSchema = nonEmptyText.superRefine((value, context) => {
  const problem = idProblem(value);
  if (problem !== undefined) {
    context.addIssue({ code: 'custom', message: `cannot be an id: ${problem}`, input: value });
  }
});

/** The range of `worker.leaseMs`: renewals run every `leaseMs / 3`, takeover scans every `/ 4`. */
export const minLeaseMs = 100;
/** An hour: a dead worker's runs wait about `leaseMs`; past 2³¹ ms a timer would fire at once. */
export const maxLeaseMs = 3_600_000;

/** The longest delay `setTimeout` waits for; a longer one fires at once (Node's overflow). */
export const maxTimerMs = 2_147_483_647;

function wholeNumber(options: { min: number; max?: number; optional?: boolean; unit?: string }) {
  const { min, max = Number.MAX_SAFE_INTEGER, optional = false, unit = '' } = options;
  const kind = `${min === 0 ? 'a non-negative' : 'a positive'} integer${optional ? ' or undefined' : ''}`;
  const base = z
    .number({ error: `must be ${kind}` })
    .int({ error: `must be ${kind}` })
    .min(min, { error: min > 1 ? `must be at least ${min}${unit}` : `must be ${kind}` })
    .max(max, {
      error:
        max === maxTimerMs
          ? `must be at most ${maxTimerMs} ms (about 24.8 days), the longest wait a timer can hold`
          : `must be at most ${max}${unit}`,
    });
  return optional ? base.optional() : base;
}

/** `limits` of `createRuntime`: the `RunLimits` fields, each optional (the defaults fill in). */
// A limit with a default may be left out, but not set to undefined; one whose default is "none"
// (maxOutputTokens, contextWindowTokens, streamIdleMs) may be undefined: no limit.
const limitsSchema = z.strictObject({
  maxSteps: wholeNumber({ min: 1 }).exactOptional(),
  maxAttempts: wholeNumber({ min: 1 }).exactOptional(),
  maxOutputTokens: wholeNumber({ min: 1, optional: true }),
  // The truncation marker alone takes about 150 characters: a smaller limit cannot hold it.
  toolOutputChars: wholeNumber({
    min: 500,
    unit: ': the model must see what was cut',
  }).exactOptional(),
  contextWindowTokens: wholeNumber({ min: 1, optional: true }),
  toolConcurrency: wholeNumber({ min: 1 }).exactOptional(),
  stopGraceMs: wholeNumber({ min: 0, max: maxTimerMs }).exactOptional(),
  streamIdleMs: wholeNumber({ min: 1, max: maxTimerMs, optional: true }),
  maxRetryAfterMs: wholeNumber({ min: 0, max: maxTimerMs }).exactOptional(),
  maxRunInputTokens: wholeNumber({ min: 1 }).exactOptional(),
  maxRunOutputTokens: wholeNumber({ min: 1 }).exactOptional(),
} satisfies { [TKey in keyof RunLimits]-?: z.ZodType });

const eventStoreMethods = [
  'append',
  'read',
  'subscribe',
  'openRuns',
  'findings',
  'sessions',
  'savePartial',
  'loadPartial',
  'clearPartial',
  'close',
] as const;

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null;

const finite = z.number({ error: 'must be a finite number' }).finite({
  error: 'must be a finite number',
});

/** `settings` of `createRuntime` and `send` (`ModelSettings`); a field may be left undefined. */
const settingsSchema = z.strictObject({
  temperature: finite.optional(),
  topP: finite.optional(),
  topK: finite.optional(),
  presencePenalty: finite.optional(),
  frequencyPenalty: finite.optional(),
  seed: z.number({ error: 'must be an integer' }).int({ error: 'must be an integer' }).optional(),
  stopSequences: z.array(z.string(), { error: 'must be an array of strings' }).optional(),
  providerOptions: z
    .record(
      z.string(),
      z.custom<Record<string, JsonValue>>(
        (value) => isObject(value) && !Array.isArray(value) && copyPlainJson(value).ok,
        {
          error:
            'must be an object of plain JSON values (provider options are recorded in the log)',
        },
      ),
      { error: "must be an object of options by provider: { openai: { reasoningEffort: 'low' } }" },
    )
    .optional(),
  maxOutputTokens: wholeNumber({ min: 1, optional: true }),
});

const aFunction = (what: string) =>
  z.custom<(...args: never[]) => unknown>((value) => typeof value === 'function', {
    error: `must be ${what}`,
  });

const optionsSchema = z.strictObject({
  model: z.custom((value) => isObject(value), {
    error:
      "must be an AI SDK language model object (e.g. openai('gpt-4.1-mini')) or a ModelAdapter; model id strings are not resolved",
  }),
  tools: z
    .custom(
      (value) =>
        typeof value === 'function' ||
        (isObject(value) &&
          !Array.isArray(value) &&
          [Object.prototype, null].includes(Object.getPrototypeOf(value))),
      {
        error:
          'must be a record of tools by name, { weather: defineTool(…) }, or a function returning one',
      },
    )
    .optional(),
  store: z
    .custom()
    .superRefine((value, context) => {
      const missing = eventStoreMethods.filter(
        (method) => !isObject(value) || typeof value[method] !== 'function',
      );
      if (missing.length > 0) {
        context.addIssue({
          code: 'custom',
          message: `must be an EventStore (lowdbStore(), memoryStore() or your own); it has no ${missing.join(', ')} method${missing.length > 1 ? 's' : ''}`,
        });
      }
    })
    .optional(),
  system: optionalText,
  limits: limitsSchema.optional(),
  settings: settingsSchema.optional(),
  policy: aFunction('a function ({ name, input, toolVerdict, sessionId }) → verdict').optional(),
  inspect: z
    .custom((value) => typeof value === 'function' || isObject(value), {
      error: 'must be an inspection function or observer ({ next })',
    })
    .optional(),
  now: aFunction('a function returning ms since the epoch').optional(),
  generateId: aFunction('a function (prefix) → a new unique id').optional(),
  random: aFunction('a function returning a number in [0, 1)').optional(),
  worker: z
    .strictObject({
      id: idSchema.optional(),
      leaseMs: z
        .number({ error: 'must be a number of milliseconds' })
        .int({ error: 'must be a whole number of milliseconds' })
        .min(minLeaseMs, { error: 'must be at least 100 ms (renewals run every leaseMs / 3)' })
        .max(maxLeaseMs, {
          error:
            "must be at most 3600000 ms (1 hour): a dead worker's runs wait about leaseMs before another worker takes them over",
        })
        .optional(),
      renewal: z
        .enum(['thread', 'loop'], {
          error:
            "must be 'thread' (a worker thread renews the leases) or 'loop' (a timer on the event loop)",
        })
        .optional(),
    })
    .optional(),
  telemetry: z
    .union(
      [
        z.literal(false),
        z.strictObject({
          tracer: z
            .custom((value) => isObject(value) && typeof value.startSpan === 'function', {
              error: "must be an OpenTelemetry Tracer (trace.getTracer('…'))",
            })
            .optional(),
          meter: z
            .custom((value) => isObject(value) && typeof value.createHistogram === 'function', {
              error: "must be an OpenTelemetry Meter (metrics.getMeter('…'))",
            })
            .optional(),
          recordContent: z.boolean({ error: 'must be true or false' }).optional(),
        }),
      ],
      { error: 'must be false (no telemetry) or an object { tracer, meter, recordContent }' },
    )
    .optional(),
});

const sessionIdSchema = idSchema;

/** The most files one message may carry (`send({ files })`). */
export const maxUserFiles = 8;
/** The largest file a message may carry, in bytes: it is recorded in the log, as base64. */
export const maxUserFileBytes = 4 * 1024 * 1024;

const userFileSchema = z.strictObject({
  mediaType: nonEmptyText,
  data: z
    .base64({ error: 'must be the file as base64 (no data: prefix)' })
    .max(Math.ceil(maxUserFileBytes / 3) * 4, {
      error: `must be at most ${maxUserFileBytes / 1024 / 1024} MiB (the log records it whole)`,
    }),
  filename: optionalText,
});

/** The schemas of the runtime's methods (their one argument). */
const methodSchemas = {
  send: z.strictObject({
    sessionId: sessionIdSchema,
    text: nonEmptyText,
    files: z
      .array(userFileSchema, { error: 'must be an array of { mediaType, data, filename? }' })
      .max(maxUserFiles, { error: `must hold at most ${maxUserFiles} files` })
      .optional(),
    regenerates: nonEmptyText.optional(),
    settings: settingsSchema.optional(),
  }),
  decide: z.strictObject({
    sessionId: sessionIdSchema,
    callId: idSchema,
    decision: z.enum(['allow', 'deny', 'report-unknown', 'abort'], {
      error: "must be one of 'allow', 'deny', 'report-unknown', 'abort'",
    }),
    reason: optionalText,
    inputHash: nonEmptyText.optional(),
  }),
  steer: z.strictObject({ sessionId: sessionIdSchema, text: nonEmptyText }),
  stop: z.strictObject({ sessionId: sessionIdSchema, reason: optionalText }),
};

type MethodName = keyof typeof methodSchemas;

/** Checks the argument of `runtime.<method>()`; returns it typed, else throws `InvalidArgumentError`. */
export function checkMethodArgument<TMethod extends MethodName>(
  method: TMethod,
  value: unknown,
): z.output<(typeof methodSchemas)[TMethod]> {
  const schema = methodSchemas[method];
  if (!isObject(value) || Array.isArray(value)) {
    const keys = Object.keys(schema.shape).join(', ');
    throw new InvalidArgumentError({
      message: `runtime.${method}() takes one object { ${keys} }, got ${shown(value)}.`,
      argument: 'input',
    });
  }
  return check(schema, value, `runtime.${method}()`, []) as z.output<
    (typeof methodSchemas)[TMethod]
  >;
}

/** Checks a session id given to `pending`, `history` or `facts`. */
export function checkSessionId(value: unknown, method: string): string {
  return check(sessionIdSchema, value, `runtime.${method}()`, ['sessionId']) as string;
}

/** Checks `createRuntime`'s options (not their defaults); throws `InvalidArgumentError`. */
export function checkRuntimeOptions(options: unknown): void {
  if (!isObject(options)) {
    throw new InvalidArgumentError({
      message: `createRuntime() takes one object { model, tools, store, … }, got ${shown(options)}.`,
      argument: 'options',
    });
  }
  check(optionsSchema, options, 'createRuntime()', []);
}

function check(schema: z.ZodType, value: unknown, where: string, prefix: string[]): unknown {
  const result = schema.safeParse(value, { reportInput: true });
  if (result.success) return result.data;
  const [first] = result.error.issues;
  if (first === undefined) return value;
  const issue = specificIssue(first);
  const path = [...prefix, ...issue.path.map(String)];
  if (issue.code === 'unrecognized_keys') {
    const [key = ''] = issue.keys;
    const known = Object.keys(shapeAt(schema, issue.path) ?? {});
    const argument = [...path, key].join('.');
    const suggestion = known.find((name) => loose(name) === loose(key));
    throw new InvalidArgumentError({
      message: `${where}: unknown option ${argument}${suggestion === undefined ? '' : ` (did you mean ${[...path, suggestion].join('.')}?)`}; the options are ${known.join(', ')}. A misspelled option would otherwise be ignored.`,
      argument,
    });
  }
  const argument = path.join('.') || 'input';
  throw new InvalidArgumentError({
    message: `${where}: ${argument} ${issue.message} (got ${shown(issue.input)}).`,
    argument,
  });
}

/**
 * Of a value no member of a union took (`telemetry: false | { … }`), the issue of the member that
 * got furthest into it (the longest path): what is wrong inside the object, not only that it is
 * not `false`. The union's own message when no member got further than another.
 */
function specificIssue(issue: z.core.$ZodIssue): z.core.$ZodIssue {
  if (issue.code !== 'invalid_union' || issue.errors.length === 0) return issue;
  const branches = issue.errors
    .map((errors) => errors[0])
    .filter((branch) => branch !== undefined)
    .sort((a, b) => b.path.length - a.path.length);
  const [deepest, next] = branches;
  if (deepest === undefined || deepest.path.length === (next?.path.length ?? -1)) return issue;
  return specificIssue({ ...deepest, path: [...issue.path, ...deepest.path] } as z.core.$ZodIssue);
}

/** The shape of the (nested) strict object at `path`, for listing its known keys. */
function shapeAt(
  schema: z.ZodType,
  path: readonly PropertyKey[],
): Record<string, unknown> | undefined {
  let current: unknown = schema;
  for (const key of path) {
    const shape = (unwrap(current) as { shape?: Record<string, unknown> }).shape;
    current = shape?.[String(key)];
  }
  return (unwrap(current) as { shape?: Record<string, unknown> }).shape;
}

function unwrap(schema: unknown): unknown {
  const inner = (schema as { unwrap?: () => unknown }).unwrap;
  if (typeof inner === 'function') return unwrap(inner.call(schema));
  // A union (`false | { … }`): its object member holds the keys.
  const members = (schema as { options?: unknown[] }).options;
  return members?.map(unwrap).find((member) => (member as { shape?: unknown }).shape) ?? schema;
}

const loose = (name: string) => name.toLowerCase().replace(/[^a-z0-9]/g, '');

function shown(value: unknown): string {
  if (typeof value === 'function') return 'a function';
  if (value === undefined) return 'undefined';
  try {
    const text = JSON.stringify(value) ?? String(value);
    return text.length > 80 ? `${text.slice(0, 79)}…` : text;
  } catch {
    return String(value);
  }
}
