import { assertNever, type ContentPart, type FactOf } from './facts.ts';
import type { ProviderOptions } from './json.ts';
import type { AssistantPart, ModelMessage, ToolResultPart } from './messages.ts';
import type { StepFacts } from './run-facts.ts';

/**
 * The messages of one piece of history, as `projectHistory` places them: a user message, or a
 * completed step's assistant message and tool message.
 */

/** The first line of the user message that stands in for compacted history. */
export const compactionSummaryHeader = 'Summary of the earlier conversation (compacted):';

/** The user message standing in for everything a compaction summarized. */
export function summaryMessage(compaction: FactOf<'compaction.completed'>): ModelMessage {
  return { role: 'user', content: `${compactionSummaryHeader}\n\n${compaction.summary}` };
}

/**
 * The `seq` the completing attempt's request was projected through: steering after it was not
 * in that request, so it goes after the step's reply (as the turn machine judges it).
 */
export function requestSeq(step: StepFacts, completed: FactOf<'step.completed'>): number {
  const attempt = step.completedAttempt;
  if (attempt === undefined) return completed.seq;
  const projectedThroughSeq = (attempt as { projectedThroughSeq?: number }).projectedThroughSeq;
  return projectedThroughSeq ?? attempt.seq;
}

/**
 * A completed step as messages: its content parts as stored, then its settled calls, followed
 * by one tool message with the calls' `tool.settled` texts in call order. Reasoning,
 * provider-executed tool calls and results, and provider options are kept only for the step's
 * own provider.
 */
export function stepMessages(
  step: StepFacts,
  completed: FactOf<'step.completed'>,
  provider: string,
): ModelMessage[] {
  const sameProvider = step.completedAttempt?.request.provider === provider;
  const parts: AssistantPart[] = [];
  for (const part of completed.content) {
    const kept = contentPart(part, sameProvider);
    if (kept !== undefined) parts.push(kept);
  }
  const results: ToolResultPart[] = [];
  for (const call of step.calls) {
    const settled = call.settled[0];
    if (settled === undefined) continue;
    const { callId, name, input, providerOptions } = call.call;
    parts.push({
      type: 'tool-call',
      callId,
      name,
      input,
      ...optionsFor(providerOptions, sameProvider),
    });
    results.push({
      type: 'tool-result',
      callId,
      name,
      text: settled.text,
      isError: settled.outcome !== 'success',
    });
  }
  const messages: ModelMessage[] = [];
  if (parts.length > 0) messages.push({ role: 'assistant', content: parts });
  if (results.length > 0) messages.push({ role: 'tool', content: results });
  return messages;
}

function contentPart(part: ContentPart, sameProvider: boolean): AssistantPart | undefined {
  switch (part.type) {
    case 'reasoning':
      // Reasoning (and its signature) only means something to the provider that produced it.
      if (!sameProvider) return undefined;
      return { type: 'reasoning', text: part.text, ...optionsFor(part.providerOptions, true) };
    case 'text':
      return { type: 'text', text: part.text, ...optionsFor(part.providerOptions, sameProvider) };
    case 'provider-tool-call':
    case 'provider-tool-result':
      // A provider's own tool call and result only mean something to that provider (another
      // would read a call of a tool it does not have); turnlog never ran them.
      return sameProvider ? part : undefined;
    default:
      return assertNever(part, 'content part');
  }
}

function optionsFor(
  providerOptions: ProviderOptions | undefined,
  sameProvider: boolean,
): { providerOptions?: ProviderOptions } {
  return sameProvider && providerOptions !== undefined ? { providerOptions } : {};
}
