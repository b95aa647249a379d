import { z } from 'zod';
import { idProblem } from './ids.ts';
import type { JsonValue } from './json.ts';

/**
 * The log's vocabulary as zod schemas: one per fact type, the single source of the fact types in
 * `facts.ts` (derived with `z.output`, so a field cannot be in a type without being checked).
 * Every store checks each fact on append and on read (`factProblem`, events/check-fact.ts).
 *
 * Two checks are built from the one definition below:
 * - `appendSchemas` (what a store accepts): strict objects (a key no version of turnlog wrote is
 *   refused, so a misspelled field is an error, not silently kept), whole numbers in range,
 *   non-empty ids. A handful of facts per append: microseconds next to the write.
 * - `readSchemas` (what a store reads back): every field present with its type, so no projection
 *   meets a missing or mistyped field later; unknown keys and ranges are not checked again. A
 *   cold read checks every fact of a session, through these schemas compiled to plain
 *   predicates (compile-check.ts): 10–30 ms of CPU per 10,000 facts (bench/RESULTS.md).
 *
 * Old logs must keep reading: a field added over time is optional, a field that was always
 * written is required, and a meaning never changes in place (a new fact type or a new optional
 * field instead; test/fixtures/logs and 0.1.0's stores are the proof).
 */
function defineFactSchemas({ strict }: { strict: boolean }) {
  const object = <TShape extends z.core.$ZodLooseShape>(shape: TShape) =>
    (strict ? z.strictObject(shape) : z.object(shape)) as z.ZodObject<TShape>;
  const whole = (min: number) => (strict ? z.number().int().min(min) : z.number());
  const nonEmpty = strict ? z.string().min(1) : z.string();
  // An id is a key (a folder name, a PostgreSQL text column): well-formed, without NUL.
  const id = strict
    ? z
        .string()
        .min(1)
        .refine((value) => idProblem(value) === undefined, {
          error: 'must be well-formed UTF-16 without NUL (a lone surrogate or NUL cannot be a key)',
        })
    : z.string();

  // Opaque provider data, replayed to the provider as it was: a read checks its two levels
  // (provider → options object), an append every value in them.
  const providerOptions = z.record(
    z.string(),
    strict ? z.record(z.string(), jsonValue) : jsonObject,
  );

  // A file a user attached to a message, as run.started records it.
  const userFile = object({
    mediaType: nonEmpty,
    /** The bytes, base64 (no data: prefix). */
    data: z.string(),
    filename: z.string().optional(),
  });
  const finishReason = object({
    unified: z.enum([
      'stop',
      'length',
      'content-filter',
      'tool-calls',
      'error',
      'interrupted',
      'other',
      'unknown',
    ]),
    raw: unknownable(z.string()),
  });

  const usage = object({
    inputTokens: unknownable(measure),
    outputTokens: unknownable(measure),
    reasoningTokens: unknownable(measure),
    cachedInputTokens: unknownable(measure),
  });

  /**
   * The parts of an assistant step, by `type`. A new kind of part is one more schema in this
   * list (and one more case wherever a `switch` over `ContentPart['type']` must handle it).
   */
  const contentPart = z.discriminatedUnion('type', [
    object({
      type: z.literal('text'),
      text: z.string(),
      providerOptions: providerOptions.optional(),
    }),
    object({
      type: z.literal('reasoning'),
      text: z.string(),
      providerOptions: providerOptions.optional(),
    }),
    object({
      type: z.literal('provider-tool-call'),
      callId: z.string(),
      /** The tool's name in the request (or the provider's own name for a tool it added). */
      name: z.string(),
      /** The parsed input; the provider's text when it is not JSON. */
      input: jsonValue,
      providerOptions: providerOptions.optional(),
    }),
    object({
      type: z.literal('provider-tool-result'),
      callId: z.string(),
      name: z.string(),
      result: jsonValue,
      isError: z.boolean(),
      providerOptions: providerOptions.optional(),
    }),
  ]);

  const toolCallProof = z.enum(['raw-bytes', 'atomic', 'whole-request']);

  const toolCallRecord = object({
    callId: z.string(),
    name: z.string(),
    /** The proved value; for a withheld call, a best-effort object for history only (never executed). */
    input: jsonValue,
    proof: toolCallProof.nullable(),
    /** Why the call may not run (present exactly when `proof` is `null`). */
    withheld: z.string().optional(),
    providerOptions: providerOptions.optional(),
  });

  const providerFailureKind = z.enum([
    'auth',
    'quota',
    'rate_limit',
    'overloaded',
    'timeout',
    'network',
    'context_overflow',
    'bad_request',
    'content_filter',
    'stream_interrupted',
    'malformed_tool_call',
    'aborted',
    'unknown',
  ]);

  const providerFailure = object({
    kind: providerFailureKind,
    retryable: z.boolean(),
    message: z.string(),
    status: whole(0).optional(),
    retryAfterMs: measure.optional(),
  });

  const requestCapture = object({
    provider: z.string(),
    modelId: z.string(),
    messageCount: whole(0),
    tools: z.array(z.string()),
    activeTools: unknownable(z.array(z.string())),
    /** `hashText` of the JSON of the whole turnlog request (system, messages, tools, options). */
    inputHash: z.string(),
    /**
     * `hashJson` of the tool definitions the request carried (names, descriptions, JSON Schemas):
     * equal in two steps exactly when the model was shown the same tools. Absent in logs written
     * before it was recorded.
     */
    toolsHash: z.string().optional(),
    /**
     * The estimated size of the request's prompt in tokens (characters ÷ 4 past the last
     * reported usage, attached files by `fileTokens`: an image 1,600, a PDF 3,000 a page, other
     * files their bytes ÷ 4): what the run's token budget counts for it until the provider
     * reports its usage, and for good when it never does (a cut stream, a crash). Absent in logs
     * written before it was recorded.
     */
    promptTokens: measure.optional(),
  });

  /** The limits as recorded (0.1.0 recorded the first seven); `createRuntime` checks new ones. */
  const runLimits = object({
    maxSteps: whole(1),
    maxAttempts: whole(1),
    maxOutputTokens: unknownable(whole(1)),
    toolOutputChars: whole(1),
    contextWindowTokens: unknownable(whole(1)),
    toolConcurrency: whole(1),
    stopGraceMs: whole(0),
    /**
     * Milliseconds a provider stream may stay silent before the step fails as a retryable
     * `timeout`. Absent in logs written before this limit existed: no limit.
     */
    streamIdleMs: whole(1).optional(),
    /**
     * The longest `Retry-After` a step waits for before its retry; a longer one fails the step.
     * Absent in logs written before this limit existed: the default (`defaultMaxRetryAfterMs`).
     */
    maxRetryAfterMs: whole(0).optional(),
    /**
     * The run's token budget: input (prompt) tokens summed over every request of the run —
     * each attempt, retried, after a recovery, on another worker, and compaction calls — and
     * likewise output tokens. A request whose usage the provider never reported counts its
     * prompt's estimated size (`requestCapture.promptTokens`). Past either, the run ends
     * `failed` / `budget_exhausted` before its next request. Absent: no budget (and in logs
     * written before budgets existed).
     */
    maxRunInputTokens: whole(1).optional(),
    maxRunOutputTokens: whole(1).optional(),
  });

  /**
   * The sampling settings and provider options every request of the run is sent with
   * (`settings` of `createRuntime` and `send`; the output token limit is `limits.maxOutputTokens`).
   * Absent when none were given, and in logs written before it existed.
   */
  const runSettings = object({
    temperature: z.number().optional(),
    topP: z.number().optional(),
    topK: z.number().optional(),
    presencePenalty: z.number().optional(),
    frequencyPenalty: z.number().optional(),
    seed: (strict ? z.number().int() : z.number()).optional(),
    stopSequences: z.array(z.string()).optional(),
    providerOptions: providerOptions.optional(),
  });

  /**
   * The W3C trace context (`traceparent`, `tracestate`) of the span a process drove the run under:
   * the run's first span in `run.started`, a recovering process's in `run.recovered`. A later span
   * of the run is that first span's child and links to the latest one recorded, so a run continued
   * after a recovery or on another worker reads as one trace (architecture/observability.md).
   * Absent when no tracer recorded the run, and in logs written before it existed.
   */
  const traceContext = object({ traceparent: nonEmpty, tracestate: z.string().optional() });

  /**
   * What a run was started with, to tell which parked runs a deploy can continue
   * (`compareFingerprints`): each tool's name and the hash of its input schema (a provider tool's:
   * of its id and arguments), in the order the model is shown them; the model; the hash of the
   * system prompt (absent without one). turnlog's version is `runtimeVersion` beside it. Absent in
   * logs written before it existed.
   */
  const runFingerprint = object({
    tools: z.array(object({ name: z.string(), inputSchemaHash: z.string() })),
    provider: z.string(),
    modelId: z.string(),
    systemHash: z.string().optional(),
  });

  const toolOutcome = z.enum([
    'success',
    'error',
    'invalid',
    'denied',
    'withheld',
    'cancelled',
    'unknown',
  ]);
  const permissionDecision = z.enum(['allow', 'deny', 'report-unknown', 'abort']);
  const reconcileAnswer = z.enum(['done', 'not-done', 'unknown', 'idempotent']);
  const runStatus = z.enum(['completed', 'failed', 'aborted']);

  /** The envelope every stored fact has. `state` is the turn machine's state after the fact. */
  const envelope = {
    id,
    seq: whole(1),
    /** ISO 8601 time of the commit. */
    at: z.string(),
    sessionId: id,
    turnId: id,
    runId: id,
    state: z.string().optional(),
    /** The worker that appended it under a lease (`RunLeases`); absent in single-process logs. */
    workerId: id.optional(),
    /** The epoch of that worker's lease on the run (its fencing token); with `workerId` only. */
    leaseEpoch: whole(1).optional(),
  };

  /** The payload of each fact type. */
  const payloads = {
    'run.started': {
      input: object({
        text: z.string(),
        /**
         * Files the user attached (images, PDFs), their bytes as base64; absent in logs before
         * files were recorded, and when none was attached.
         */
        files: z.array(userFile).optional(),
      }),
      /**
       * The run this one supersedes: a `regenerate()` of its answer, for the same input (the UI
       * shows the newer answer only); absent for a new message.
       */
      regenerates: z.string().optional(),
      runtimeVersion: z.string(),
      limits: runLimits,
      /** Sampling settings and provider options of the run's requests; absent when none were given. */
      settings: runSettings.optional(),
      system: z.string().optional(),
      /** The turn machine's `version` that began the run; absent before versions were recorded. */
      machineVersion: z.string().optional(),
      /** What the run was started with (tools, model, system prompt); absent before it was recorded. */
      fingerprint: runFingerprint.optional(),
      /** The trace context of the run's first span; absent when no tracer recorded it. */
      trace: traceContext.optional(),
    },
    'step.started': {
      stepId: z.string(),
      attempt: whole(1),
      request: requestCapture,
      /** `seq` of the last fact the request's history was projected from (steering after it is unanswered). */
      projectedThroughSeq: whole(0).optional(),
    },
    'step.completed': {
      stepId: z.string(),
      finishReason,
      usage,
      content: z.array(contentPart),
      toolCalls: z.array(toolCallRecord),
      response: object({ id: unknownable(z.string()), modelId: unknownable(z.string()) }),
    },
    'step.failed': { stepId: z.string(), error: providerFailure, observedOutput: z.boolean() },
    'tool.permission.requested': {
      callId: z.string(),
      name: z.string(),
      input: jsonValue,
      inputHash: z.string(),
      reason: z.string().optional(),
    },
    'tool.permission.decided': {
      callId: z.string(),
      decision: permissionDecision,
      inputHash: z.string(),
      by: z.enum(['user', 'policy']),
      reason: z.string().optional(),
    },
    'tool.started': {
      callId: z.string(),
      name: z.string(),
      input: jsonValue,
      inputHash: z.string(),
    },
    'tool.settled': {
      callId: z.string(),
      name: z.string(),
      outcome: toolOutcome,
      text: z.string(),
      output: jsonValue.optional(),
      truncated: z.boolean(),
      durationMs: measure.optional(),
    },
    'tool.indeterminate': {
      callId: z.string(),
      name: z.string(),
      /**
       * How this recovery resolves the call without a person: `reconcile` (its tool's `reconcile`
       * is asked whether it took effect) or `idempotent` (its tool says running it again has the
       * effect of running it once). Absent when a person must decide, and in logs written before
       * tools could say either.
       */
      check: z.enum(['reconcile', 'idempotent']).optional(),
    },
    /**
     * What a recovery found out about a call that started and never settled (`tool.indeterminate`
     * with `check`): `done` (its `reconcile` says it took effect; the call's `tool.settled`
     * success, with the output `reconcile` gave, is in the same append), `not-done` (it did not:
     * it runs again, once, under its decision), `unknown` (`reconcile` could not tell, threw or
     * timed out: a person is asked, shown `reason`), or `idempotent` (not asked: its tool is
     * idempotent, so it runs again).
     */
    'tool.reconciled': {
      callId: z.string(),
      name: z.string(),
      answer: reconcileAnswer,
      /** What `reconcile` said, or what went wrong asking it (with `unknown`). */
      reason: z.string().optional(),
    },
    'steering.received': { messageId: z.string(), text: z.string() },
    'compaction.started': {
      reason: z.enum(['budget', 'overflow']),
      estimatedTokens: measure.optional(),
      budgetTokens: measure.optional(),
    },
    'compaction.completed': {
      summary: z.string(),
      throughSeq: whole(0),
      tokensBefore: measure,
      tokensAfter: measure,
    },
    'compaction.failed': { error: providerFailure },
    'retry.due': { stepId: z.string(), attempt: whole(1) },
    'run.stop.requested': { reason: z.string() },
    'run.recovered': {
      interrupted: z.string(),
      indeterminate: z.array(z.string()),
      /** The trace context of the recovering process's span; absent when no tracer recorded it. */
      trace: traceContext.optional(),
    },
    'run.ended': {
      status: runStatus,
      reason: z.string(),
      error: z.union([providerFailure, object({ message: z.string() })]).optional(),
    },
  };

  type Payloads = typeof payloads;
  const factSchema = <TType extends keyof Payloads>(type: TType) =>
    object({ ...envelope, type: z.literal(type), ...payloads[type] });
  const facts = Object.fromEntries(
    (Object.keys(payloads) as (keyof Payloads)[]).map((type) => [type, factSchema(type)]),
  ) as { [TType in keyof Payloads]: ReturnType<typeof factSchema<TType>> };

  return {
    facts,
    envelope: object(envelope),
    payloads: Object.fromEntries(
      Object.entries(payloads).map(([type, shape]) => [type, object(shape)]),
    ) as { [TType in keyof Payloads]: z.ZodObject<Payloads[TType]> },
    finishReason,
    usage,
    contentPart,
    toolCallProof,
    toolCallRecord,
    providerFailureKind,
    providerFailure,
    requestCapture,
    runLimits,
    runSettings,
    runFingerprint,
    traceContext,
    toolOutcome,
    permissionDecision,
    reconcileAnswer,
    runStatus,
  };
}

/**
 * A value that may be unknown: `undefined` in memory, an absent key once stored (JSON drops
 * `undefined`). The check accepts a missing key; the type stays `T | undefined` with the key
 * required, so code that builds the value must say "unknown" rather than forget it.
 */
function unknownable<TSchema extends z.ZodType>(schema: TSchema) {
  return schema.optional() as unknown as z.ZodUnion<[TSchema, z.ZodUndefined]>;
}

/**
 * Any JSON value. Only `undefined` is refused here: a store makes every appended fact plain JSON
 * first (`copyPlainJson` refuses functions, `NaN`, `Date`, cycles), and a stored fact was parsed
 * from JSON text, so checking JSON again, value by value, would only add to every read.
 */
const jsonValue = z.custom<JsonValue>((value) => value !== undefined, {
  message: 'must be a JSON value',
});

const jsonObject = z.custom<{ [key: string]: JsonValue }>(
  (value) => typeof value === 'object' && value !== null && !Array.isArray(value),
  { message: 'must be a JSON object' },
);

// Token counts, durations and delays are measured by providers and clocks: any finite number
// (a budget is negative for a tiny window; a clock can step back).
const measure = z.number();

/** What a store accepts on append (strict). */
export const appendSchemas = defineFactSchemas({ strict: true });

/** What a store accepts on read (every field and its type). */
export const readSchemas = defineFactSchemas({ strict: false });

/** The schema of each fact type, by type (the fact types in facts.ts are their outputs). */
export type FactSchemas = typeof appendSchemas.facts;

/** Every fact type, in the order of the README's table. */
export const factTypes = Object.keys(appendSchemas.facts) as (keyof FactSchemas)[];
