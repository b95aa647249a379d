import { assertNever, type Fact } from '../events/facts.ts';
import type { TurnReadModel } from '../events/project-turn.ts';
import { reconcileText } from '../events/reconcile-text.ts';

/** One line of a session's timeline: what the fact says, in words (`show`, `tail`). */
export interface TimelineEntry {
  seq: number;
  at: string;
  runId: string;
  type: Fact['type'];
  /** The turn machine's state after the fact. */
  state: string | undefined;
  workerId: string | undefined;
  summary: string;
}

/**
 * The timeline entry of a fact. `view` (the session's `projectTurn`) gives a completed step's
 * text, so the words come from the projection rather than a second reading of the content.
 */
export function timelineEntry(fact: Fact, view: TurnReadModel | undefined): TimelineEntry {
  return {
    seq: fact.seq,
    at: fact.at,
    runId: fact.runId,
    type: fact.type,
    state: fact.state,
    workerId: fact.workerId,
    summary: summarize(fact, view),
  };
}

/** `  12  10:42:07  tool.settled  sendInvoice call_inv: success "sent" → requesting.streaming`. */
export function timelineLine(entry: TimelineEntry): string {
  const time = entry.at.slice(11, 19);
  const state = entry.state === undefined ? '' : `  → ${entry.state}`;
  return `${String(entry.seq).padStart(5)}  ${time}  ${entry.type.padEnd(26)}${entry.summary}${state}`;
}

function summarize(fact: Fact, view: TurnReadModel | undefined): string {
  switch (fact.type) {
    case 'run.started':
      return `${fact.runId}: ${quote(fact.input.text)}`;
    case 'step.started':
      return `${fact.stepId} attempt ${fact.attempt}: ${fact.request.provider}:${fact.request.modelId}, ${fact.request.messageCount} messages, tools ${fact.request.tools.join(', ') || 'none'}`;
    case 'step.completed':
      return completedSummary(fact, view);
    case 'step.failed':
      return `${fact.stepId}: ${fact.error.kind}${fact.error.retryable ? ' (retryable)' : ''} ${quote(fact.error.message)}`;
    case 'tool.permission.requested':
      return `${fact.name} ${fact.callId} asks a person${fact.reason === undefined ? '' : ` (${fact.reason})`}: ${cut(JSON.stringify(fact.input))}`;
    case 'tool.permission.decided':
      return `${fact.callId}: ${fact.decision} by ${fact.by}${fact.reason === undefined ? '' : ` (${fact.reason})`}`;
    case 'tool.started':
      return `${fact.name} ${fact.callId}: ${cut(JSON.stringify(fact.input))}`;
    case 'tool.settled':
      return `${fact.name} ${fact.callId}: ${fact.outcome} ${quote(fact.text)}`;
    case 'tool.indeterminate':
      return fact.check === undefined
        ? `${fact.name} ${fact.callId}: may have run (a person reports unknown or aborts)`
        : `${fact.name} ${fact.callId}: may have run (its tool is asked: ${fact.check})`;
    case 'tool.reconciled':
      return `${fact.name} ${fact.callId}: ${reconcileText(fact.answer, fact.reason)}`;
    case 'steering.received':
      return quote(fact.text);
    case 'compaction.started':
      return fact.reason;
    case 'compaction.completed':
      return `${fact.tokensBefore} → ${fact.tokensAfter} tokens`;
    case 'compaction.failed':
      return `${fact.error.kind} ${quote(fact.error.message)}`;
    case 'retry.due':
      return `${fact.stepId} attempt ${fact.attempt}`;
    case 'run.stop.requested':
      return quote(fact.reason);
    case 'run.recovered':
      return `interrupted in ${fact.interrupted}${fact.indeterminate.length > 0 ? `; indeterminate ${fact.indeterminate.join(', ')}` : ''}`;
    case 'run.ended':
      return `${fact.status}: ${fact.reason}${fact.error === undefined ? '' : ` ${quote(fact.error.message)}`}`;
    default:
      return assertNever(fact, 'fact');
  }
}

function completedSummary(
  fact: Extract<Fact, { type: 'step.completed' }>,
  view: TurnReadModel | undefined,
): string {
  const step = view?.runs
    .find((run) => run.runId === fact.runId)
    ?.steps.find((candidate) => candidate.stepId === fact.stepId);
  const calls = fact.toolCalls.map((call) => `${call.name} ${call.callId}`);
  const text = step === undefined || step.text === '' ? '' : ` ${quote(step.text)}`;
  return `${fact.stepId}: ${fact.finishReason.unified}${calls.length > 0 ? `, calls ${calls.join(', ')}` : ''}${text}`;
}

function quote(text: string): string {
  return JSON.stringify(cut(text));
}

function cut(text: string, max = 80): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}
