import type { Fact } from '../../events/facts.ts';
import {
  acceptsUserDecision,
  budgetSpent,
  callHasStatus,
  callState,
  callsBeingChecked,
  callsNeedingPerson,
  hasAttemptsLeft,
  isRetryableFailure,
  type TurnContext,
  unsettled,
} from './turn-context.ts';

type GuardArgs = { context: TurnContext; event: Fact };

/**
 * The turn machine's named guards: pure predicates of its context and the fact at hand, so the
 * machine reads as a diagram (in the inspector and the Stately visualizer) and each rule is one
 * named function.
 */
export const turnGuards = {
  hasToolCalls: ({ event }) => event.type === 'step.completed' && event.toolCalls.length > 0,
  steeredDuringStep: ({ context }) => context.lastSteeringSeq > context.projectedThroughSeq,
  /** The step that just completed (counted) was the last one `maxSteps` allows. */
  stepLimitReached: ({ context }) => context.completedSteps >= context.limits.maxSteps,
  /** The step now completing (not yet counted) is the last one `maxSteps` allows. */
  isLastAllowedStep: ({ context }) => context.completedSteps + 1 >= context.limits.maxSteps,
  mayCompact: ({ context }) => !context.compactedSinceStep,
  /** The run's token budget is spent: no further request (compaction calls included). */
  budgetExhausted: ({ context }) => budgetSpent(context),
  firstOverflow: ({ context, event }) =>
    event.type === 'step.failed' &&
    event.error.kind === 'context_overflow' &&
    context.overflowCompactions === 0,
  // I9: only a failure before any observable output is retried, within maxAttempts.
  retryable: ({ context, event }) =>
    event.type === 'step.failed' && isRetryableFailure(event) && hasAttemptsLeft(context),
  attemptsLeft: ({ context }) => hasAttemptsLeft(context),
  isDueRetry: ({ context, event }) =>
    event.type === 'retry.due' &&
    context.retry !== undefined &&
    event.stepId === context.retry.stepId &&
    event.attempt === context.retry.attempt,
  callProposed: ({ context, event }) => callHasStatus(context, event, 'proposed'),
  callOpen: ({ context, event }) =>
    callHasStatus(
      context,
      event,
      'proposed',
      'asked',
      'decided',
      'started',
      'indeterminate',
      'checking',
    ),
  callStarted: ({ context, event }) => callHasStatus(context, event, 'started'),
  /** A recovery may mark a started call, and mark again one still unsettled (to check it). */
  callMayBeMarked: ({ context, event }) =>
    callHasStatus(context, event, 'started', 'indeterminate', 'checking'),
  callChecking: ({ context, event }) => callHasStatus(context, event, 'checking'),
  anyChecking: ({ context }) => context.calls.some((call) => call.status === 'checking'),
  /** Every call's tool answered this recovery's check, and each `done` one settled. */
  checksAnswered: ({ context }) => callsBeingChecked(context).length === 0,
  policyDecision: ({ context, event }) =>
    event.type === 'tool.permission.decided' &&
    event.by === 'policy' &&
    (event.decision === 'allow' || event.decision === 'deny') &&
    callHasStatus(context, event, 'proposed'),
  userDecision: ({ context, event }) => {
    if (event.type !== 'tool.permission.decided' || event.by !== 'user') return false;
    const call = callState(context, event.callId);
    return call !== undefined && acceptsUserDecision(call, event.decision);
  },
  // I5: a call starts only with an allow bound to the hash of its validated input.
  startAllowed: ({ context, event }) => {
    if (event.type !== 'tool.started') return false;
    const call = callState(context, event.callId);
    return (
      call?.status === 'decided' &&
      call.decision?.decision === 'allow' &&
      call.decision.inputHash === event.inputHash
    );
  },
  allDecided: ({ context }) => context.calls.every((call) => call.status !== 'proposed'),
  needsPerson: ({ context }) => callsNeedingPerson(context).length > 0,
  abortDecided: ({ context }) => context.calls.some((call) => call.decision?.decision === 'abort'),
  allSettled: ({ context }) => unsettled(context).length === 0,
} satisfies Record<string, (args: GuardArgs) => boolean>;
