import { describe, expect, it } from 'vitest';
import type { Fact, ProposedFact } from '../../events/facts.ts';
import { projectHistory } from '../../events/project-history.ts';
import { chooseThroughSeq } from '../../machines/effects/summarize-actor.ts';
import { factBuilder, runStartedDraft } from '../helpers/fact-builder.ts';

const usage = {
  inputTokens: 10,
  outputTokens: 2,
  reasoningTokens: undefined,
  cachedInputTokens: undefined,
};
const request = {
  provider: 'scripted',
  modelId: 'm',
  messageCount: 1,
  tools: [],
  activeTools: undefined,
  inputHash: 'h',
};
const completed = (stepId: string, text: string): ProposedFact => ({
  type: 'step.completed',
  stepId,
  finishReason: { unified: 'stop', raw: 'stop' },
  usage,
  content: [{ type: 'text', text }],
  toolCalls: [],
  response: { id: undefined, modelId: undefined },
});

/** A finished first run, then a second run whose step saw a steering message arrive mid-request. */
function session(): Fact[] {
  const first = factBuilder({ runId: 'run_1' });
  const facts = [
    first(runStartedDraft('first question')),
    first({ type: 'step.started', stepId: 'step_1', attempt: 1, request, projectedThroughSeq: 1 }),
    first(completed('step_1', 'first answer')),
    first({ type: 'run.ended', status: 'completed', reason: 'end_turn' }),
  ];
  const second = factBuilder({ runId: 'run_2', firstSeq: 5 });
  facts.push(
    second(runStartedDraft('second question')),
    second({ type: 'step.started', stepId: 'step_2', attempt: 1, request, projectedThroughSeq: 5 }),
    second({ type: 'steering.received', messageId: 'm1', text: 'and keep it short' }),
    second(completed('step_2', 'second answer')),
  );
  return facts;
}

describe('chooseThroughSeq', () => {
  it('keeps what the newest step had not seen, so steering that arrived during it still follows its reply', () => {
    const facts = session();
    const throughSeq = chooseThroughSeq(facts, 'run_2');
    expect(throughSeq).toBe(5);
    const compacted = [
      ...facts,
      {
        ...facts[0],
        id: 'compaction_1',
        seq: 9,
        runId: 'run_2',
        type: 'compaction.completed',
        summary: 'They asked two questions.',
        throughSeq,
        tokensBefore: 40,
        tokensAfter: 8,
      } as Fact,
    ];
    const history = projectHistory(compacted, { provider: 'scripted' });
    expect(history.slice(1)).toEqual([
      { role: 'assistant', content: [{ type: 'text', text: 'second answer' }] },
      { role: 'user', content: 'and keep it short' },
    ]);
    expect(history[0]).toMatchObject({ role: 'user' });
    expect((history[0] as { content: string }).content).toContain('They asked two questions.');
  });

  it('has nothing to summarize before a run’s first step when the session holds nothing older', () => {
    const only = factBuilder({ runId: 'run_1' });
    expect(chooseThroughSeq([only(runStartedDraft('hello'))], 'run_1')).toBeUndefined();
  });
});
