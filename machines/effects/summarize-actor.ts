import type { Fact } from '../../events/facts.ts';
import { type ModelMessage, userText } from '../../events/messages.ts';
import { projectHistory } from '../../events/project-history.ts';
import type { SummarizeInput } from '../pure/actor-inputs.ts';
import { requestLimits } from './prepare-step-actor.ts';
import { fromTask, type ServicesOf } from './run-services.ts';

const summarySystem =
  'You compact the history of an agent session. Write a faithful, dense summary that lets the agent ' +
  'continue the task without the original messages: the user requests, decisions, facts learned, ' +
  'files and commands involved, tool results that still matter, and what remains to do. Do not invent anything.';

/**
 * The `seq` up to which history is summarized: the latest point at which every tool call made so
 * far has its result (a call and its result are never split), strictly before what the newest
 * step's request had not seen (kept verbatim: a steering message that arrived during that step
 * must still follow its reply) — or, before the run's first step, before its user input.
 */
export function chooseThroughSeq(facts: readonly Fact[], runId: string): number | undefined {
  const previous = facts.findLast((fact) => fact.type === 'compaction.completed');
  const floor = previous?.type === 'compaction.completed' ? previous.throughSeq : 0;
  const lastStep = facts.findLast((fact) => fact.type === 'step.completed' && fact.runId === runId);
  const runStart = facts.find((fact) => fact.type === 'run.started' && fact.runId === runId);
  const keepFrom =
    lastStep === undefined
      ? (runStart?.seq ?? Number.POSITIVE_INFINITY)
      : keptStepStart(facts, lastStep);
  let open = 0;
  let best: number | undefined;
  for (const fact of facts) {
    if (fact.type === 'step.completed') open += fact.toolCalls.length;
    else if (fact.type === 'tool.settled') open = Math.max(0, open - 1);
    if (fact.seq >= keepFrom) break;
    if (open === 0 && fact.seq > floor) best = fact.seq;
  }
  return best;
}

/** The first `seq` the completed step's request had not projected (its `step.started` at the latest). */
function keptStepStart(facts: readonly Fact[], completed: Fact): number {
  const started = facts.findLast(
    (fact) =>
      fact.type === 'step.started' &&
      fact.seq < completed.seq &&
      fact.stepId === (completed as { stepId?: string }).stepId,
  );
  if (started?.type !== 'step.started') return completed.seq;
  return Math.min(started.seq, (started.projectedThroughSeq ?? started.seq - 1) + 1);
}

/** A plain transcript of messages: robust across providers (no tool-call parts to validate). */
export function transcript(messages: readonly ModelMessage[]): string {
  const lines: string[] = [];
  for (const message of messages) {
    if (message.role === 'system' || message.role === 'user')
      lines.push(`${message.role === 'user' ? 'User' : 'System'}: ${userText(message.content)}`);
    else if (message.role === 'assistant') {
      for (const part of message.content) {
        if (part.type === 'text') lines.push(`Assistant: ${part.text}`);
        else if (part.type === 'tool-call')
          lines.push(
            `Assistant called ${part.name}(${JSON.stringify(part.input)}) [${part.callId}]`,
          );
      }
    } else {
      for (const part of message.content)
        lines.push(`Result of ${part.name} [${part.callId}]: ${part.text}`);
    }
  }
  return lines.join('\n');
}

/**
 * The `summarize` actor (state `compacting`): one auxiliary request, without tools, summarizes
 * the older history; commits `compaction.completed` (facts stay in the log; projection uses the
 * summary) or `compaction.failed`.
 */
export function summarizeActor(servicesOf: ServicesOf) {
  return fromTask<SummarizeInput>(servicesOf, async (services, input, signal) => {
    const facts = services.facts();
    const throughSeq = chooseThroughSeq(facts, input.runId);
    if (throughSeq === undefined) {
      await services.commit({
        type: 'compaction.failed',
        error: {
          kind: 'context_overflow',
          retryable: false,
          message: 'Nothing older to summarize: the newest step alone exceeds the context window.',
        },
      });
      return;
    }
    const older = projectHistory(
      facts.filter((fact) => fact.seq <= throughSeq),
      { provider: services.adapter.provider },
    );
    const text = transcript(older);
    const step = services.adapter.step({
      system: summarySystem,
      messages: [{ role: 'user', content: `Summarize this session history:\n\n${text}` }],
      tools: [],
      ...requestLimits(services.limits),
      abortSignal: AbortSignal.any([services.signal, signal]),
    });
    const completion = await step.completion;
    if (signal.aborted) return;
    if (completion.type === 'step.failed') {
      await services.commit({ type: 'compaction.failed', error: completion.error });
      return;
    }
    const summary = completion.content
      .filter((part) => part.type === 'text')
      .map((part) => part.text)
      .join('');
    await services.commit({
      type: 'compaction.completed',
      summary,
      throughSeq,
      tokensBefore: Math.ceil(text.length / 4),
      tokensAfter: Math.ceil(summary.length / 4),
    });
  });
}
