import type { z } from 'zod';
import { factProblem } from './check-fact.ts';
import { type appendSchemas, type FactSchemas, factTypes } from './fact-schemas.ts';
import type { JsonObject } from './json.ts';

type Schemas = typeof appendSchemas;

/**
 * The log's vocabulary. Every entry is a fact: an envelope (`id`, `seq`, `at`, `sessionId`,
 * `turnId`, `runId`, `type`, `state`) plus the payload of its type. Facts are plain JSON. The
 * types here are derived from the schemas in `fact-schemas.ts`, which every store checks.
 *
 * Meanings never change in place: a new meaning is a new fact type or a new optional field,
 * and old logs (test/fixtures/logs) keep replaying.
 */

/** Why a provider step finished: the unified reason and the provider's own spelling. */
export type FinishReason = z.output<Schemas['finishReason']>;

/** Token usage of one step. A number the provider did not report stays `undefined`, never 0. */
export type Usage = z.output<Schemas['usage']>;

/**
 * A part of an assistant step, in stream order, with the provider options needed to replay it:
 * text, reasoning, and the calls and results of tools the provider ran itself (web search, code
 * execution). turnlog never executes a provider tool; its parts are replayed only to the provider
 * that produced them. (Calls of turnlog's own tools are `ToolCallRecord`s, not content.)
 */
export type ContentPart = z.output<Schemas['contentPart']>;

/** A call of a provider-executed tool, as the provider streamed it. */
export type ProviderToolCallPart = Extract<ContentPart, { type: 'provider-tool-call' }>;

/** The result of a provider-executed tool, as the provider streamed it. */
export type ProviderToolResultPart = Extract<ContentPart, { type: 'provider-tool-result' }>;

/**
 * How the tool-call guard proved a call complete (`null`: not proved, see `withheld`).
 * - `raw-bytes`: start, deltas, end observed; the value was parsed from the streamed bytes.
 * - `atomic`: start and end with no delta, while a sibling streamed bytes; the value is `{}`.
 * - `whole-request`: no call in the request streamed bytes; the provider's parsed input is used.
 */
export type ToolCallProof = z.output<Schemas['toolCallProof']>;

/** One tool call the model made, as the guard judged it. */
export type ToolCallRecord = z.output<Schemas['toolCallRecord']>;

/** Kinds of provider failure; see `adapters/provider-error.ts` for how each is recognised. */
export type ProviderFailureKind = z.output<Schemas['providerFailureKind']>;

/** A provider failure as data. */
export type ProviderFailure = z.output<Schemas['providerFailure']>;

/** What a step's request carried, recorded in `step.started` before it is sent. */
export type RequestCapture = z.output<Schemas['requestCapture']>;

/** The run's limits, recorded in `run.started` so a replay of the log needs nothing else. */
export type RunLimits = z.output<Schemas['runLimits']>;

/**
 * The sampling settings and provider options every request of a run is sent with, recorded in
 * `run.started` (`settings` of `createRuntime` and `send`).
 */
export type RunSettings = z.output<Schemas['runSettings']>;

/** What a run was started with, recorded in `run.started` (see `compareFingerprints`). */
export type RecordedFingerprint = z.output<Schemas['runFingerprint']>;

/** A span's W3C trace context, as `run.started` and `run.recovered` record it. */
export type TraceContext = z.output<Schemas['traceContext']>;

export type ToolOutcome = z.output<Schemas['toolOutcome']>;

export type PermissionDecision = z.output<Schemas['permissionDecision']>;

/** What a recovery found out about a call that may have run (`tool.reconciled`). */
export type ReconcileAnswer = z.output<Schemas['reconcileAnswer']>;

export type RunStatus = z.output<Schemas['runStatus']>;

/** The envelope every stored fact has. `state` is the turn machine's state after the fact. */
export type FactEnvelope = z.output<Schemas['envelope']>;

/** Payloads by fact type. */
export type FactPayloads = {
  [TType in FactType]: z.output<Schemas['payloads'][TType]>;
};

export type FactType = keyof FactSchemas;

/** Any stored fact: a discriminated union on `type`. */
export type Fact = { [TType in FactType]: z.output<FactSchemas[TType]> }[FactType];

/** A stored fact of one type. */
export type FactOf<TType extends FactType> = Extract<Fact, { type: TType }>;

/** A fact before the store gave it a `seq`. */
export type NewFact = { [TType in FactType]: Omit<FactOf<TType>, 'seq'> }[FactType];

export { factTypes };

/** True when `value` is a well-formed stored fact: its type's schema accepts it. */
export function isFact(value: unknown): value is Fact {
  return factProblem(value, { stored: true }) === undefined;
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
      /** A call of a provider-executed tool: the provider runs it, turnlog never does. */
      providerExecuted?: true;
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
export type ProposedFact = {
  [TType in FactType]: { type: TType; id?: string } & FactPayloads[TType];
}[FactType];

/**
 * Commits a fact ("commit, then transition"): resolves `true` once it is durable and the turn
 * machine took it, `false` when it was not appended because the machine does not accept it
 * now (for example tool output after a stop, I10) or because its `id` is already in the log.
 */
export type CommitFact = (draft: ProposedFact) => Promise<boolean>;
