import type {
  ContentPart,
  Fact,
  FinishReason,
  PermissionDecision,
  ProviderFailure,
  ReconcileAnswer,
  RunStatus,
  ToolCallProof,
  ToolOutcome,
  Usage,
} from './facts.ts';
import type { JsonValue } from './json.ts';
import { reconcileText } from './reconcile-text.ts';
import {
  type CallFacts,
  collectRuns,
  type PendingDecision,
  pendingDecisions,
  type RunFacts,
  type StepFacts,
} from './run-facts.ts';

export type { PendingDecision } from './run-facts.ts';

/** The read model a UI renders: a session's runs, what they wait for, and what they cost. */
export interface TurnReadModel {
  /** `undefined` for an empty log. */
  sessionId: string | undefined;
  runs: RunView[];
  /** Every decision a person owes, across the session's unfinished runs. */
  pending: PendingDecision[];
  /** Usage summed over every completed step of the session. */
  usage: Usage;
}

/** `running` and `awaiting` (a person must decide) are live; the others come from `run.ended`. */
export type RunViewStatus = 'running' | 'awaiting' | RunStatus;

/** One run of the session. */
export interface RunView {
  runId: string;
  turnId: string;
  /** The user's input (`undefined` when `run.started` is not in the facts). */
  input: string | undefined;
  status: RunViewStatus;
  /** The turn machine's state after the run's last fact that recorded one. */
  state: string | undefined;
  /** `run.ended.reason` once the run ended. */
  reason: string | undefined;
  error: ProviderFailure | { message: string } | undefined;
  startedAt: string | undefined;
  endedAt: string | undefined;
  steps: StepView[];
  /** The text of the run's last completed step (the answer so far). */
  text: string;
  pending: PendingDecision[];
  /** Usage summed over the run's completed steps. */
  usage: Usage;
}

/**
 * - `requesting`: the latest attempt is in flight;
 * - `retrying`: the latest attempt failed and a retry is scheduled;
 * - `abandoned`: the run ended, or moved on, without the latest attempt finishing.
 */
export type StepViewStatus = 'requesting' | 'retrying' | 'completed' | 'failed' | 'abandoned';

/** One provider step (all its attempts). */
export interface StepView {
  stepId: string;
  attempts: number;
  status: StepViewStatus;
  /** The provider and model of the latest attempt. */
  provider: string | undefined;
  modelId: string | undefined;
  finishReason: FinishReason | undefined;
  usage: Usage | undefined;
  text: string;
  reasoning: string;
  toolCalls: ToolCallView[];
  /**
   * The calls of tools the provider ran itself (web search, code execution), in the step's
   * order: not turnlog's calls — never proved, asked about, started or settled by turnlog.
   */
  providerTools: ProviderToolView[];
  /** The failure of the latest failed attempt. */
  error: ProviderFailure | undefined;
}

/** One tool call of a completed step, and how far it got. */
export interface ToolCallView {
  callId: string;
  name: string;
  input: JsonValue;
  proof: ToolCallProof | null;
  withheld: string | undefined;
  /** The latest permission fact for the call: `pending` while a person is asked. */
  permission: PermissionView | undefined;
  started: boolean;
  /** Started, found unfinished by recovery, and not settled yet. */
  indeterminate: boolean;
  /**
   * The latest check of its tool after a restart (`tool.reconciled`): its answer, the tool's
   * reason, and the sentence a UI shows ("checked after a restart: it had run" / "… it had not
   * run, so it ran again"). `undefined` for a call never checked.
   */
  reconciled: ReconciledView | undefined;
  outcome: ToolOutcome | undefined;
  /** The `tool.settled` text: exactly what the model sees. */
  result: string | undefined;
}

/**
 * A call of a provider-executed tool and its result, as the provider reported them in
 * `step.completed` content. A result that came in a later step of the run (Anthropic's code
 * execution) is shown on its call; a result whose call is not in the run has a view of its own.
 */
export interface ProviderToolView {
  callId: string;
  name: string;
  /** `undefined` for a result whose call is not in the run. */
  input: JsonValue | undefined;
  /** `undefined` until the provider's result arrives. */
  outcome: 'success' | 'error' | undefined;
  result: JsonValue | undefined;
}

/** What the check after a restart found (`tool.reconciled`). */
export interface ReconciledView {
  answer: ReconcileAnswer;
  reason: string | undefined;
  /** `reconcileText(answer, reason)`. */
  text: string;
}

/** Where a call's permission stands: asked (`pending`) or decided, by whom and why. */
export interface PermissionView {
  decision: PermissionDecision | 'pending';
  by: 'user' | 'policy' | undefined;
  reason: string | undefined;
}

/**
 * Projects a session's facts to the read model UIs render. Pure and deterministic (I1); a
 * usage total stays `undefined` only when no step reported that number.
 *
 * @example
 * const view = projectTurn(await store.read(sessionId));
 * const current = view.runs.at(-1); // { status: 'awaiting', pending: [...], text: '…' }
 */
export function projectTurn(facts: readonly Fact[]): TurnReadModel {
  const runs = collectRuns(facts).map(runView);
  return {
    sessionId: facts[0]?.sessionId,
    runs,
    pending: runs.flatMap((run) => run.pending),
    usage: sumUsage(runs.map((run) => run.usage)),
  };
}

function runView(run: RunFacts): RunView {
  const ended = run.runEnded[0];
  const started = run.runStarted[0];
  const pending = pendingDecisions(run);
  const completions = run.steps
    .flatMap((step) => step.completions.slice(0, 1))
    .sort((left, right) => left.seq - right.seq);
  const lastCompleted = completions.at(-1);
  // The run's provider-executed calls by id: a result may come in a later step than its call.
  const providerCalls = new Map<string, ProviderToolView>();
  return {
    runId: run.runId,
    turnId: run.turnId,
    input: started?.input.text,
    status: ended?.status ?? (pending.length > 0 ? 'awaiting' : 'running'),
    state: run.lastState,
    reason: ended?.reason,
    error: ended?.error,
    startedAt: started?.at,
    endedAt: ended?.at,
    steps: run.steps.map((step, index) =>
      stepView(step, {
        runEnded: ended !== undefined,
        isLast: index === run.steps.length - 1,
        providerCalls,
      }),
    ),
    text: lastCompleted === undefined ? '' : joinText(lastCompleted.content, 'text'),
    pending,
    usage: sumUsage(completions.map((completion) => completion.usage)),
  };
}

function stepView(
  step: StepFacts,
  where: { runEnded: boolean; isLast: boolean; providerCalls: Map<string, ProviderToolView> },
): StepView {
  const completed = step.completions[0];
  const attempt = step.attempts.at(-1);
  return {
    stepId: step.stepId,
    attempts: step.attempts.length,
    status: stepStatus(step, where),
    provider: attempt?.request.provider,
    modelId: attempt?.request.modelId,
    finishReason: completed?.finishReason,
    usage: completed?.usage,
    text: completed === undefined ? '' : joinText(completed.content, 'text'),
    reasoning: completed === undefined ? '' : joinText(completed.content, 'reasoning'),
    toolCalls: step.calls.map(toolCallView),
    providerTools: providerToolViews(completed?.content ?? [], where.providerCalls),
    error: step.failures.at(-1)?.error,
  };
}

function stepStatus(
  step: StepFacts,
  where: { runEnded: boolean; isLast: boolean },
): StepViewStatus {
  if (step.completions.length > 0) return 'completed';
  const attempt = step.attempts.at(-1);
  const failure = step.failures.at(-1);
  const live = !where.runEnded && where.isLast;
  if (failure === undefined || (attempt !== undefined && attempt.seq > failure.seq)) {
    return live ? 'requesting' : 'abandoned';
  }
  const retryScheduled =
    failure.state === 'requesting.backingOff' ||
    step.retries.some((retry) => retry.seq > failure.seq);
  return live && retryScheduled ? 'retrying' : 'failed';
}

function toolCallView(call: CallFacts): ToolCallView {
  const settled = call.settled[0];
  let permission: PermissionView | undefined;
  let indeterminate = false;
  let reconciled: ReconciledView | undefined;
  for (const fact of call.facts) {
    if (fact.type === 'tool.reconciled') {
      const { answer, reason } = fact;
      reconciled = { answer, reason, text: reconcileText(answer, reason) };
    }
    if (fact.type === 'tool.permission.requested') {
      permission = { decision: 'pending', by: undefined, reason: fact.reason };
    }
    if (fact.type === 'tool.permission.decided') {
      permission = { decision: fact.decision, by: fact.by, reason: fact.reason };
    }
    if (fact.type === 'tool.indeterminate') indeterminate = true;
    // Run again after its check: a new start, not (yet) found unfinished.
    if (fact.type === 'tool.started') indeterminate = false;
  }
  const { callId, name, input, proof, withheld } = call.call;
  return {
    callId,
    name,
    input,
    proof,
    withheld,
    permission,
    started: call.started.length > 0,
    indeterminate: indeterminate && settled === undefined,
    reconciled,
    outcome: settled?.outcome,
    result: settled?.text,
  };
}

/** The step's provider-executed calls; results land on the run's earlier calls. */
function providerToolViews(
  content: readonly ContentPart[],
  calls: Map<string, ProviderToolView>,
): ProviderToolView[] {
  const views: ProviderToolView[] = [];
  for (const part of content) {
    if (part.type !== 'provider-tool-call' && part.type !== 'provider-tool-result') continue;
    let view = calls.get(part.callId);
    if (view === undefined) {
      view = {
        callId: part.callId,
        name: part.name,
        input: undefined,
        outcome: undefined,
        result: undefined,
      };
      calls.set(part.callId, view);
      views.push(view);
    }
    if (part.type === 'provider-tool-call') view.input = part.input;
    else Object.assign(view, { outcome: part.isError ? 'error' : 'success', result: part.result });
  }
  return views;
}

function joinText(content: readonly ContentPart[], type: 'text' | 'reasoning'): string {
  return content.map((part) => (part.type === type && 'text' in part ? part.text : '')).join('');
}

const usageKeys = ['inputTokens', 'outputTokens', 'reasoningTokens', 'cachedInputTokens'] as const;

/** Sums each number that some usage reported; a number nobody reported stays `undefined`. */
function sumUsage(usages: readonly Usage[]): Usage {
  const total: Usage = {
    inputTokens: undefined,
    outputTokens: undefined,
    reasoningTokens: undefined,
    cachedInputTokens: undefined,
  };
  for (const usage of usages) {
    for (const key of usageKeys) {
      const value = usage[key];
      if (value !== undefined) total[key] = (total[key] ?? 0) + value;
    }
  }
  return total;
}
