import {
  assertNever,
  type Fact,
  type FactOf,
  type PermissionDecision,
  type ProviderFailure,
  type ReconcileAnswer,
  type RunLimits,
  type RunStatus,
} from '../../events/facts.ts';
import { decisionFits } from '../../events/run-facts.ts';

/**
 * The turn machine's context and the pure functions that read and update it. Context stays
 * small and JSON: ids, counters, the current step's calls and their settlement, limits —
 * never the history (that is the log's, I1).
 */

export type CallStatus =
  /** Proven or not, awaiting validation and a permission verdict. */
  | 'proposed'
  /** `tool.permission.requested`: waiting for a person. */
  | 'asked'
  /** A decision is in the log; the call can be settled. */
  | 'decided'
  /** `tool.started` is durable; `execute` may be running. */
  | 'started'
  /**
   * Recovery found it started and never settled; a person decides (I8: it runs again only when
   * its tool is idempotent or its `reconcile` says it did not take effect).
   */
  | 'indeterminate'
  /** Started and never settled, and its tool is being asked (`reconcile`, or it is idempotent). */
  | 'checking'
  | 'settled';

export interface CallState {
  callId: string;
  name: string;
  status: CallStatus;
  decision?: {
    decision: PermissionDecision;
    inputHash: string;
    by: 'user' | 'policy';
    reason?: string;
  };
  /** How many times it started (`tool.started`); absent before its first start. */
  executions?: number;
  /** The latest answer of its tool after a restart (`tool.reconciled`). */
  reconciled?: { answer: ReconcileAnswer; reason?: string };
}

/**
 * Why a run ended, as its `run.ended` records it and `turn.done` reports it:
 * - `end_turn` (completed): the model ended its turn with a clean `stop` (or `tool-calls`);
 * - `max_output_tokens`: the final answer was cut at the output token limit;
 * - `content_filter`: the provider filtered the answer;
 * - `step_limit`: `maxSteps` steps ran (their calls settled);
 * - `provider_error`: a step failed and was not retried (its error says why; a cut-off answer
 *   is one), or finished in a way that does not say the answer is complete;
 * - `retries_exhausted`: every attempt of a step failed before any output;
 * - `context_overflow`: the request did not fit the context window, even after compaction;
 * - `compaction_failed`: summarizing older history failed;
 * - `interrupted`: a restart found the run's request in flight with no attempt left;
 * - `stop_requested` (aborted): `stop()` was called;
 * - `permission_abort` (aborted): a person decided `abort`;
 * - `budget_exhausted`: the run's token budget (`maxRunInputTokens`, `maxRunOutputTokens`) was
 *   spent; no further request was sent.
 */
export type Reason =
  | 'end_turn'
  | 'max_output_tokens'
  | 'content_filter'
  | 'step_limit'
  | 'provider_error'
  | 'retries_exhausted'
  | 'context_overflow'
  | 'compaction_failed'
  | 'interrupted'
  | 'stop_requested'
  | 'permission_abort'
  | 'budget_exhausted';

export interface TurnOutcome {
  status: RunStatus;
  reason: Reason;
  error?: ProviderFailure | { message: string };
}

export interface TurnContext {
  sessionId: string;
  turnId: string;
  runId: string;
  limits: RunLimits;
  /** The step being requested (or last requested). */
  stepId: string | undefined;
  attempt: number;
  /** The attempt `projecting` should make next, when it retries a failed or interrupted one. */
  retry: { stepId: string; attempt: number } | undefined;
  /** Delay the provider asked for before the retry (Retry-After), if any. */
  retryAfterMs: number | undefined;
  /** Completed steps in this run (for `maxSteps`). */
  completedSteps: number;
  /** `seq` of the last fact the current request's projection included (`step.started`). */
  projectedThroughSeq: number;
  /** `seq` of the latest `steering.received`. */
  lastSteeringSeq: number;
  /** Compactions caused by `context_overflow` in this run (a second overflow fails it). */
  overflowCompactions: number;
  /** True after a compaction until the next step completes (no second budget compaction). */
  compactedSinceStep: boolean;
  /** The calls of the current step, in the model's order. */
  calls: CallState[];
  /** How many times recovery resumed this run after a restart. */
  recoveries: number;
  /**
   * Tokens the run's requests have cost (every attempt, compaction calls included): reported
   * usage, else the prompt's estimated size (`request.promptTokens`). Counted for the budget.
   */
  tokensSpent: { input: number; output: number };
  /** The estimated prompt of the request in flight, counted until its usage is reported. */
  inFlightPromptTokens: number;
  /** The estimated prompt of the current compaction's summarizing call (`compaction.started`). */
  compactionPromptTokens: number;
  outcome: TurnOutcome | undefined;
}

/**
 * What a state says about the run's life, for the runtime to react to (never a state's name):
 * - `parked`: waiting, with no actor and no timer; the runtime may drop the live actor and
 *   rebuild it from the log when something arrives;
 * - `needsPerson`: only a person's decision (`runtime.decide()`) moves the run on;
 * - `stopping`: the stop (or an abort decision) is recorded; open calls are being settled.
 */
export type TurnTag = 'parked' | 'needsPerson' | 'stopping';

export interface TurnInput {
  sessionId: string;
  turnId: string;
  runId: string;
  limits: RunLimits;
}

/** The machine input a `run.started` fact implies: the log alone rebuilds the run (I1). */
export function inputFromRunStarted(fact: FactOf<'run.started'>): TurnInput {
  return { sessionId: fact.sessionId, turnId: fact.turnId, runId: fact.runId, limits: fact.limits };
}

export function initialContext(input: TurnInput): TurnContext {
  return {
    ...input,
    stepId: undefined,
    attempt: 0,
    retry: undefined,
    retryAfterMs: undefined,
    completedSteps: 0,
    projectedThroughSeq: 0,
    lastSteeringSeq: 0,
    overflowCompactions: 0,
    compactedSinceStep: false,
    calls: [],
    recoveries: 0,
    tokensSpent: { input: 0, output: 0 },
    inFlightPromptTokens: 0,
    compactionPromptTokens: 0,
    outcome: undefined,
  };
}

/** The run has a token budget (`maxRunInputTokens` or `maxRunOutputTokens`). */
export function hasTokenBudget(limits: RunLimits): boolean {
  return limits.maxRunInputTokens !== undefined || limits.maxRunOutputTokens !== undefined;
}

/** The run spent its input or its output token budget. */
export function budgetSpent(context: TurnContext): boolean {
  const { maxRunInputTokens, maxRunOutputTokens } = context.limits;
  const { input, output } = context.tokensSpent;
  return (
    (maxRunInputTokens !== undefined && input >= maxRunInputTokens) ||
    (maxRunOutputTokens !== undefined && output >= maxRunOutputTokens)
  );
}

/**
 * What a completed step cost: its reported usage, the prompt's estimate standing in for input
 * tokens the provider did not report (the estimate was counted when the step started).
 */
export function spentAfterCompletion(
  context: TurnContext,
  usage: FactOf<'step.completed'>['usage'],
): TurnContext['tokensSpent'] {
  const { input, output } = context.tokensSpent;
  return {
    input:
      input - context.inFlightPromptTokens + (usage.inputTokens ?? context.inFlightPromptTokens),
    output: output + (usage.outputTokens ?? 0),
  };
}

export function callState(context: TurnContext, callId: string): CallState | undefined {
  return context.calls.find((call) => call.callId === callId);
}

export function callHasStatus(
  context: TurnContext,
  event: Fact,
  ...statuses: CallStatus[]
): boolean {
  if (!('callId' in event)) return false;
  const call = callState(context, event.callId);
  return call !== undefined && statuses.includes(call.status);
}

export function updateCall(
  context: TurnContext,
  callId: string,
  patch: Partial<CallState>,
): CallState[] {
  return context.calls.map((call) => (call.callId === callId ? { ...call, ...patch } : call));
}

export function unsettled(context: TurnContext): CallState[] {
  return context.calls.filter((call) => call.status !== 'settled');
}

/** Calls that still need a person: a permission ask, or an unresolved indeterminate call. */
export function callsNeedingPerson(context: TurnContext): CallState[] {
  return context.calls.filter((call) => call.status === 'asked' || call.status === 'indeterminate');
}

/** Calls whose tool is being asked after a restart, or whose settlement it is about to commit. */
export function callsBeingChecked(context: TurnContext): CallState[] {
  return context.calls.filter((call) => call.status === 'checking' || call.status === 'started');
}

/** A decision a person may give for a call in its current status (`decisionFits`). */
export function acceptsUserDecision(call: CallState, decision: PermissionDecision): boolean {
  if (call.status === 'asked') return decisionFits('permission', decision);
  if (call.status === 'indeterminate') return decisionFits('indeterminate', decision);
  return false;
}

/**
 * The machine's output once it is done: the outcome its transitions recorded. Every transition
 * into `terminal` records one; were one to miss it, the run would end `interrupted` rather than
 * with a reason outside `Reason`.
 */
export function outcomeOf(context: TurnContext): TurnOutcome {
  return context.outcome ?? { status: 'failed', reason: 'interrupted' };
}

/**
 * Turns a step's finish reason into the outcome of a run that ends without tool calls. Only a
 * clean `stop` (or `tool-calls`) completes the run: an answer cut at the output limit, filtered,
 * or finished for a reason that does not say it is complete is never `completed`. (The AI SDK
 * adapter already fails a step whose finish is not one of stop, tool-calls, length and
 * content-filter; a step recorded by another adapter, or by an older turnlog, lands here.)
 */
export function outcomeOfFinalStep(fact: FactOf<'step.completed'>): TurnOutcome {
  const { unified, raw } = fact.finishReason;
  switch (unified) {
    case 'stop':
    case 'tool-calls':
      return { status: 'completed', reason: 'end_turn' };
    case 'length':
      return { status: 'failed', reason: 'max_output_tokens' };
    case 'content-filter':
      return { status: 'failed', reason: 'content_filter' };
    case 'error':
    case 'interrupted':
    case 'other':
    case 'unknown':
      return {
        status: 'failed',
        reason: 'provider_error',
        error: {
          message: `The model's last step finished with reason "${unified}"${raw === undefined ? '' : ` (provider reason "${raw}")`}, which does not say the answer is complete.`,
        },
      };
    default:
      return assertNever(unified, 'finish reason');
  }
}

/** I9: a failure the provider calls retryable, before any observable output. */
export function isRetryableFailure(fact: FactOf<'step.failed'>): boolean {
  return fact.error.retryable && !fact.observedOutput;
}

/** The step has attempts left under `maxAttempts`. */
export function hasAttemptsLeft(context: TurnContext): boolean {
  return context.attempt < context.limits.maxAttempts;
}

/** The outcome of a `step.failed` that is not retried. */
export function outcomeOfFailure(context: TurnContext, fact: FactOf<'step.failed'>): TurnOutcome {
  const exhausted = isRetryableFailure(fact) && !hasAttemptsLeft(context);
  return {
    status: fact.error.kind === 'aborted' ? 'aborted' : 'failed',
    reason: exhausted
      ? 'retries_exhausted'
      : fact.error.kind === 'context_overflow'
        ? 'context_overflow'
        : 'provider_error',
    error: fact.error,
  };
}
