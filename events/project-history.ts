import { assertNever, type ContentPart, type Fact, type FactOf } from './facts.ts';
import type { ProviderOptions } from './json.ts';
import type { AssistantPart, ModelMessage, ToolResultPart } from './messages.ts';
import { collectRuns, type StepFacts } from './run-facts.ts';

/** The first line of the user message that stands in for compacted history. */
export const compactionSummaryHeader = 'Summary of the earlier conversation (compacted):';

/** Options of `projectHistory`. */
export interface ProjectHistoryOptions {
  /** The provider the next request goes to (`ModelAdapter.provider`, e.g. `openai.responses`). */
  provider: string;
}

/** A piece of history and where the log puts it. */
interface Placed {
  seq: number;
  /** Breaks a tie on `seq`: a step goes after the fact its request was projected through. */
  after: 0 | 1;
  messages: ModelMessage[];
}

/**
 * Projects a session's facts to the messages the next request carries (no system message: the
 * system prompt travels separately). Pure and deterministic (I1).
 *
 * - each run's input is a user message; each completed step is an assistant message
 *   (its content parts as stored, then its settled calls), followed by one tool message with
 *   the calls' `tool.settled` texts in call order;
 * - reasoning, provider-executed tool calls and results, and provider options on any part, are
 *   kept only for the step's own provider;
 * - steering is a user message where it arrived; steering the step's request did not include
 *   goes after that step's messages, so a call and its result are never split;
 * - the latest `compaction.completed` replaces every fact up to `throughSeq` by one user
 *   message; a step is kept or replaced whole;
 * - failed steps, unfinished steps and calls without `tool.settled` leave nothing.
 *
 * @example
 * const messages = projectHistory(await store.read(sessionId), { provider: adapter.provider });
 */
export function projectHistory(
  facts: readonly Fact[],
  { provider }: ProjectHistoryOptions,
): ModelMessage[] {
  const compaction = facts.findLast(
    (fact): fact is FactOf<'compaction.completed'> => fact.type === 'compaction.completed',
  );
  const throughSeq = compaction?.throughSeq ?? 0;
  const placed: Placed[] = [];

  for (const run of collectRuns(facts)) {
    const started = run.runStarted[0];
    if (started !== undefined && started.seq > throughSeq) {
      placed.push(userAt(started.seq, started.input.text));
    }
    for (const steering of run.steering) {
      if (steering.seq > throughSeq) placed.push(userAt(steering.seq, steering.text));
    }
    for (const step of run.steps) {
      const completed = step.completions[0];
      // I6: a step is summarized or shown whole, so no call loses its result.
      if (completed === undefined || completed.seq <= throughSeq) continue;
      placed.push({
        seq: requestSeq(step, completed),
        after: 1,
        messages: stepMessages(step, completed, provider),
      });
    }
  }

  placed.sort((left, right) => left.seq - right.seq || left.after - right.after);
  const messages: ModelMessage[] =
    compaction === undefined
      ? []
      : [{ role: 'user', content: `${compactionSummaryHeader}\n\n${compaction.summary}` }];
  for (const entry of placed) messages.push(...entry.messages);
  return messages;
}

/**
 * The `seq` the completing attempt's request was projected through: steering after it was not
 * in that request, so it goes after the step's reply (as the turn machine judges it).
 */
function requestSeq(step: StepFacts, completed: FactOf<'step.completed'>): number {
  const attempt = step.completedAttempt;
  if (attempt === undefined) return completed.seq;
  const projectedThroughSeq = (attempt as { projectedThroughSeq?: number }).projectedThroughSeq;
  return projectedThroughSeq ?? attempt.seq;
}

function stepMessages(
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

function userAt(seq: number, text: string): Placed {
  return { seq, after: 0, messages: [{ role: 'user', content: text }] };
}
