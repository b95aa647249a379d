import type { JsonObject, JsonValue, ProviderOptions } from './json.ts';

/**
 * The log's vocabulary. Every entry is a fact: an envelope (`id`, `seq`, `at`, `sessionId`,
 * `turnId`, `runId`, `type`, `state`) plus the payload of its type. Facts are plain JSON.
 *
 * Meanings never change in place: a new meaning is a new fact type or a new optional field,
 * and old logs (test/fixtures/logs) keep replaying.
 */

/** Why a provider step finished: the unified reason and the provider's own spelling. */
export interface FinishReason {
  unified:
    | 'stop'
    | 'length'
    | 'content-filter'
    | 'tool-calls'
    | 'error'
    | 'interrupted'
    | 'other'
    | 'unknown';
  raw: string | undefined;
}

/** Token usage of one step. A number the provider did not report stays `undefined`, never 0. */
export interface Usage {
  inputTokens: number | undefined;
  outputTokens: number | undefined;
  reasoningTokens: number | undefined;
  cachedInputTokens: number | undefined;
}

/**
 * A part of an assistant step, in stream order, with the provider options needed to replay it:
 * text, reasoning, and the calls and results of tools the provider ran itself (web search, code
 * execution). turnlog never executes a provider tool; its parts are replayed only to the provider
 * that produced them. (Calls of turnlog's own tools are `ToolCallRecord`s, not content.)
 */
export type ContentPart =
  | { type: 'text'; text: string; providerOptions?: ProviderOptions }
  | { type: 'reasoning'; text: string; providerOptions?: ProviderOptions }
  | ProviderToolCallPart
  | ProviderToolResultPart;

/** A call of a provider-executed tool, as the provider streamed it. */
export interface ProviderToolCallPart {
  type: 'provider-tool-call';
  callId: string;
  /** The tool's name in the request (or the provider's own name for a tool it added). */
  name: string;
  /** The parsed input; the provider's text when it is not JSON. */
  input: JsonValue;
  providerOptions?: ProviderOptions;
}

/** The result of a provider-executed tool, as the provider streamed it. */
export interface ProviderToolResultPart {
  type: 'provider-tool-result';
  callId: string;
  name: string;
  result: JsonValue;
  isError: boolean;
  providerOptions?: ProviderOptions;
}

/**
 * How the tool-call guard proved a call complete (`null`: not proved, see `withheld`).
 * - `raw-bytes`: start, deltas, end observed; the value was parsed from the streamed bytes.
 * - `atomic`: start and end with no delta, while a sibling streamed bytes; the value is `{}`.
 * - `whole-request`: no call in the request streamed bytes; the provider's parsed input is used.
 */
export type ToolCallProof = 'raw-bytes' | 'atomic' | 'whole-request';

/** One tool call the model made, as the guard judged it. */
export interface ToolCallRecord {
  callId: string;
  name: string;
  /** The proved value; for a withheld call, a best-effort object for history only (never executed). */
  input: JsonValue;
  proof: ToolCallProof | null;
  /** Why the call may not run (present exactly when `proof` is `null`). */
  withheld?: string;
  providerOptions?: ProviderOptions;
}

/** Kinds of provider failure; see `adapters/provider-error.ts` for how each is recognised. */
export type ProviderFailureKind =
  | 'auth'
  | 'quota'
  | 'rate_limit'
  | 'overloaded'
  | 'timeout'
  | 'network'
  | 'context_overflow'
  | 'bad_request'
  | 'content_filter'
  | 'stream_interrupted'
  | 'malformed_tool_call'
  | 'aborted'
  | 'unknown';

/** A provider failure as data. */
export interface ProviderFailure {
  kind: ProviderFailureKind;
  retryable: boolean;
  message: string;
  status?: number;
  retryAfterMs?: number;
}

/** What a step's request carried, recorded in `step.started` before it is sent. */
export interface RequestCapture {
  provider: string;
  modelId: string;
  messageCount: number;
  tools: string[];
  activeTools: string[] | undefined;
  /** `hashText` of the JSON of the whole turnlog request (system, messages, tools, options). */
  inputHash: string;
  /**
   * `hashJson` of the tool definitions the request carried (names, descriptions, JSON Schemas):
   * equal in two steps exactly when the model was shown the same tools. Absent in logs written
   * before it was recorded.
   */
  toolsHash?: string;
}

/** The run's limits, recorded in `run.started` so a replay of the log needs nothing else. */
export interface RunLimits {
  maxSteps: number;
  maxAttempts: number;
  maxOutputTokens: number | undefined;
  toolOutputChars: number;
  contextWindowTokens: number | undefined;
  toolConcurrency: number;
  stopGraceMs: number;
  /**
   * Milliseconds a provider stream may stay silent before the step fails as a retryable
   * `timeout`. Absent in logs written before this limit existed: no limit.
   */
  streamIdleMs?: number;
}

export type ToolOutcome =
  | 'success'
  | 'error'
  | 'invalid'
  | 'denied'
  | 'withheld'
  | 'cancelled'
  | 'unknown';

export type PermissionDecision = 'allow' | 'deny' | 'report-unknown' | 'abort';

export type RunStatus = 'completed' | 'failed' | 'aborted';

/** The envelope every stored fact has. `state` is the turn machine's state after the fact. */
export interface FactEnvelope {
  id: string;
  seq: number;
  /** ISO 8601 time of the commit. */
  at: string;
  sessionId: string;
  turnId: string;
  runId: string;
  state?: string;
  /** The worker that appended it under a lease (`RunLeases`); absent in single-process logs. */
  workerId?: string;
  /** The epoch of that worker's lease on the run (its fencing token); with `workerId` only. */
  leaseEpoch?: number;
}

/** Payloads by fact type. */
export interface FactPayloads {
  'run.started': {
    input: { text: string };
    runtimeVersion: string;
    limits: RunLimits;
    system?: string;
  };
  'step.started': {
    stepId: string;
    attempt: number;
    request: RequestCapture;
    /** `seq` of the last fact the request's history was projected from (steering after it is unanswered). */
    projectedThroughSeq?: number;
  };
  'step.completed': {
    stepId: string;
    finishReason: FinishReason;
    usage: Usage;
    content: ContentPart[];
    toolCalls: ToolCallRecord[];
    response: { id: string | undefined; modelId: string | undefined };
  };
  'step.failed': { stepId: string; error: ProviderFailure; observedOutput: boolean };
  'tool.permission.requested': {
    callId: string;
    name: string;
    input: JsonValue;
    inputHash: string;
    reason?: string;
  };
  'tool.permission.decided': {
    callId: string;
    decision: PermissionDecision;
    inputHash: string;
    by: 'user' | 'policy';
    reason?: string;
  };
  'tool.started': { callId: string; name: string; input: JsonValue; inputHash: string };
  'tool.settled': {
    callId: string;
    name: string;
    outcome: ToolOutcome;
    text: string;
    output?: JsonValue;
    truncated: boolean;
    durationMs?: number;
  };
  'tool.indeterminate': { callId: string; name: string };
  'steering.received': { messageId: string; text: string };
  'compaction.started': {
    reason: 'budget' | 'overflow';
    estimatedTokens?: number;
    budgetTokens?: number;
  };
  'compaction.completed': {
    summary: string;
    throughSeq: number;
    tokensBefore: number;
    tokensAfter: number;
  };
  'compaction.failed': { error: ProviderFailure };
  'retry.due': { stepId: string; attempt: number };
  'run.stop.requested': { reason: string };
  'run.recovered': { interrupted: string; indeterminate: string[] };
  'run.ended': { status: RunStatus; reason: string; error?: ProviderFailure | { message: string } };
}

export type FactType = keyof FactPayloads;

/** Any stored fact: a discriminated union on `type`. */
export type Fact = {
  [TType in FactType]: FactEnvelope & { type: TType } & FactPayloads[TType];
}[FactType];

/** A stored fact of one type. */
export type FactOf<TType extends FactType> = Extract<Fact, { type: TType }>;

/** A fact before the store gave it a `seq`. */
export type NewFact = { [TType in FactType]: Omit<FactOf<TType>, 'seq'> }[FactType];

/** Every fact type, in the order of the table in DESIGN.md. */
export const factTypes = [
  'run.started',
  'step.started',
  'step.completed',
  'step.failed',
  'tool.permission.requested',
  'tool.permission.decided',
  'tool.started',
  'tool.settled',
  'tool.indeterminate',
  'steering.received',
  'compaction.started',
  'compaction.completed',
  'compaction.failed',
  'retry.due',
  'run.stop.requested',
  'run.recovered',
  'run.ended',
] as const satisfies readonly FactType[];

/** True when `value` looks like a stored fact (an envelope with a known `type`). */
export function isFact(value: unknown): value is Fact {
  if (typeof value !== 'object' || value === null) return false;
  const candidate = value as Record<string, unknown>;
  return (
    typeof candidate.id === 'string' &&
    typeof candidate.seq === 'number' &&
    typeof candidate.sessionId === 'string' &&
    typeof candidate.runId === 'string' &&
    (factTypes as readonly string[]).includes(candidate.type as string)
  );
}

/**
 * Transient events: streamed to subscribers while a step runs, never stored as facts and never
 * replayed to a model.
 */
export type TransientEvent =
  | { type: 'text.delta'; sessionId: string; runId: string; stepId: string; text: string }
  | { type: 'reasoning.delta'; sessionId: string; runId: string; stepId: string; text: string }
  | {
      type: 'tool.input.delta';
      sessionId: string;
      runId: string;
      stepId: string;
      callId: string;
      name: string;
      delta: string;
    };

export type TransientEventType = TransientEvent['type'];

/** The partial output of one step seen so far, kept for display after a crash (bounded). */
export interface PartialSnapshot {
  runId: string;
  stepId: string;
  attempt: number;
  text: string;
  reasoning: string;
  /** True when `text` or `reasoning` was cut to the store's bound. */
  truncated: boolean;
}

/** Narrows a fact array to the facts of one type. */
export function factsOfType<TType extends FactType>(
  facts: readonly Fact[],
  type: TType,
): FactOf<TType>[] {
  return facts.filter((fact): fact is FactOf<TType> => fact.type === type);
}

/** Exhaustiveness check for `switch` statements over discriminated unions. */
export function assertNever(value: never, what = 'value'): never {
  throw new Error(`Unexpected ${what}: ${JSON.stringify(value)}`);
}

export type { JsonObject };

/**
 * A fact as an actor proposes it: its type and payload, optionally its `id` (deterministic ids
 * make a repeated commit a no-op). The runtime adds the envelope (`id` if absent, `at`,
 * `sessionId`, `turnId`, `runId`, `state`) and `seq`.
 */
export type FactDraft = {
  [TType in FactType]: { type: TType; id?: string } & FactPayloads[TType];
}[FactType];

/**
 * Commits a fact ("commit, then transition"): resolves `true` once it is durable and the turn
 * machine took it, `false` when it was not appended because the machine does not accept it
 * now (for example tool output after a stop, I10) or because its `id` is already in the log.
 */
export type CommitFact = (draft: FactDraft) => Promise<boolean>;
