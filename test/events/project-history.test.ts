import { describe, expect, it } from 'vitest';
import type { ModelMessage } from '../../events/messages.ts';
import { compactionSummaryHeader, projectHistory } from '../../events/project-history.ts';
import { draft, logBuilder } from './log-builder.ts';

const summaryOf = (summary: string): ModelMessage => ({
  role: 'user',
  content: `${compactionSummaryHeader}\n\n${summary}`,
});

describe('the provider rule', () => {
  function reasoningStep(provider: string) {
    const log = logBuilder();
    log.startRun('go');
    log.add(draft.stepStarted('s1', { provider }));
    log.add(
      draft.stepCompleted('s1', {
        content: [
          { type: 'reasoning', text: 'think', providerOptions: { a: { signature: 'sig' } } },
          { type: 'text', text: 'say', providerOptions: { a: { itemId: 'm1' } } },
          { type: 'reasoning', text: 'think more', providerOptions: { a: { signature: 'sig2' } } },
        ],
        calls: [draft.call('c1', { providerOptions: { a: { thoughtSignature: 't' } } })],
      }),
    );
    log.add(draft.settled('c1', 'ok'));
    return log.facts;
  }

  it('keeps reasoning in stored order and every provider option for the same provider', () => {
    expect(projectHistory(reasoningStep('a.chat'), { provider: 'a.chat' })[1]).toStrictEqual({
      role: 'assistant',
      content: [
        { type: 'reasoning', text: 'think', providerOptions: { a: { signature: 'sig' } } },
        { type: 'text', text: 'say', providerOptions: { a: { itemId: 'm1' } } },
        { type: 'reasoning', text: 'think more', providerOptions: { a: { signature: 'sig2' } } },
        {
          type: 'tool-call',
          callId: 'c1',
          name: 'tool',
          input: {},
          providerOptions: { a: { thoughtSignature: 't' } },
        },
      ],
    });
  });

  it('drops reasoning and strips provider options from text and calls for another provider', () => {
    expect(projectHistory(reasoningStep('a.chat'), { provider: 'b.chat' })[1]).toStrictEqual({
      role: 'assistant',
      content: [
        { type: 'text', text: 'say' },
        { type: 'tool-call', callId: 'c1', name: 'tool', input: {} },
      ],
    });
  });

  it('judges each step by the provider of the attempt that completed it', () => {
    const log = logBuilder();
    log.startRun('go');
    log.add(draft.stepStarted('s1', { provider: 'b.chat' }));
    log.add(draft.stepFailed('s1'));
    log.add({ type: 'retry.due', stepId: 's1', attempt: 2 });
    log.add(draft.stepStarted('s1', { provider: 'a.chat', attempt: 2 }));
    log.add(draft.stepCompleted('s1', { content: [{ type: 'reasoning', text: 'think' }] }));
    expect(projectHistory(log.facts, { provider: 'a.chat' })).toStrictEqual([
      { role: 'user', content: 'go' },
      { role: 'assistant', content: [{ type: 'reasoning', text: 'think' }] },
    ]);
  });

  it('omits an assistant message left empty when only reasoning was dropped', () => {
    const log = logBuilder();
    log.startRun('go');
    log.add(draft.stepStarted('s1', { provider: 'a.chat' }));
    log.add(draft.stepCompleted('s1', { content: [{ type: 'reasoning', text: 'think' }] }));
    log.add(draft.ended());
    log.startRun('again');
    expect(projectHistory(log.facts, { provider: 'b.chat' })).toStrictEqual([
      { role: 'user', content: 'go' },
      { role: 'user', content: 'again' },
    ]);
  });
});

describe('steering placement', () => {
  it('puts steering that arrived during a text step’s request after that step’s reply', () => {
    const log = logBuilder();
    log.startRun('go');
    log.add(draft.stepStarted('s1'));
    log.add(draft.steering('also this'));
    log.add(draft.stepCompleted('s1', { content: [{ type: 'text', text: 'first' }] }));
    log.add(draft.stepStarted('s2'));
    log.add(draft.stepCompleted('s2', { content: [{ type: 'text', text: 'second' }] }));
    expect(projectHistory(log.facts, { provider: 'test.provider' })).toStrictEqual([
      { role: 'user', content: 'go' },
      { role: 'assistant', content: [{ type: 'text', text: 'first' }] },
      { role: 'user', content: 'also this' },
      { role: 'assistant', content: [{ type: 'text', text: 'second' }] },
    ]);
  });

  it('puts steering that arrived before a step’s request before that step', () => {
    const log = logBuilder();
    log.startRun('go');
    log.add(draft.steering('early'));
    log.add(draft.stepStarted('s1'));
    log.add(draft.stepCompleted('s1', { content: [{ type: 'text', text: 'answer' }] }));
    expect(projectHistory(log.facts, { provider: 'test.provider' })).toStrictEqual([
      { role: 'user', content: 'go' },
      { role: 'user', content: 'early' },
      { role: 'assistant', content: [{ type: 'text', text: 'answer' }] },
    ]);
  });

  it('uses projectedThroughSeq: steering after it was not in the request', () => {
    const build = (projectedThroughSeq: number) => {
      const log = logBuilder();
      log.startRun('go'); // seq 1
      log.add(draft.steering('late')); // seq 2
      log.add(draft.stepStarted('s1', { projectedThroughSeq })); // seq 3
      log.add(draft.stepCompleted('s1', { content: [{ type: 'text', text: 'answer' }] }));
      return projectHistory(log.facts, { provider: 'test.provider' });
    };
    expect(build(1)).toStrictEqual([
      { role: 'user', content: 'go' },
      { role: 'assistant', content: [{ type: 'text', text: 'answer' }] },
      { role: 'user', content: 'late' },
    ]);
    expect(build(2)).toStrictEqual([
      { role: 'user', content: 'go' },
      { role: 'user', content: 'late' },
      { role: 'assistant', content: [{ type: 'text', text: 'answer' }] },
    ]);
  });

  it('puts steering from a failed attempt before the retried attempt that carried it', () => {
    const log = logBuilder();
    log.startRun('go');
    log.add(draft.stepStarted('s1'));
    log.add(draft.steering('meanwhile'));
    log.add(draft.stepFailed('s1'));
    log.add({ type: 'retry.due', stepId: 's1', attempt: 2 });
    log.add(draft.stepStarted('s1', { attempt: 2 }));
    log.add(draft.stepCompleted('s1', { content: [{ type: 'text', text: 'answer' }] }));
    expect(projectHistory(log.facts, { provider: 'test.provider' })).toStrictEqual([
      { role: 'user', content: 'go' },
      { role: 'user', content: 'meanwhile' },
      { role: 'assistant', content: [{ type: 'text', text: 'answer' }] },
    ]);
  });

  it('never splits two calls from their results when steering arrives between the results', () => {
    const log = logBuilder();
    log.startRun('go');
    log.add(draft.stepStarted('s1'));
    log.add(draft.stepCompleted('s1', { calls: [draft.call('c1'), draft.call('c2')] }));
    log.add(draft.settled('c1', 'one'));
    log.add(draft.steering('wait'));
    log.add(draft.settled('c2', 'two'));
    expect(projectHistory(log.facts, { provider: 'test.provider' })).toStrictEqual([
      { role: 'user', content: 'go' },
      {
        role: 'assistant',
        content: [
          { type: 'tool-call', callId: 'c1', name: 'tool', input: {} },
          { type: 'tool-call', callId: 'c2', name: 'tool', input: {} },
        ],
      },
      {
        role: 'tool',
        content: [
          { type: 'tool-result', callId: 'c1', name: 'tool', text: 'one', isError: false },
          { type: 'tool-result', callId: 'c2', name: 'tool', text: 'two', isError: false },
        ],
      },
      { role: 'user', content: 'wait' },
    ]);
  });
});

describe('compaction replacement', () => {
  it('replaces every fact through throughSeq by one user message with the summary', () => {
    const log = logBuilder();
    log.startRun('one'); // 1
    log.add(draft.stepStarted('s1')); // 2
    log.add(draft.stepCompleted('s1', { content: [{ type: 'text', text: 'a1' }] })); // 3
    log.add(draft.ended()); // 4
    log.startRun('two'); // 5
    log.add(draft.compacted('they talked about one', 4)); // 6
    log.add(draft.stepStarted('s2')); // 7
    log.add(draft.stepCompleted('s2', { content: [{ type: 'text', text: 'a2' }] })); // 8
    expect(projectHistory(log.facts, { provider: 'test.provider' })).toStrictEqual([
      {
        role: 'user',
        content: 'Summary of the earlier conversation (compacted):\n\nthey talked about one',
      },
      { role: 'user', content: 'two' },
      { role: 'assistant', content: [{ type: 'text', text: 'a2' }] },
    ]);
  });

  it('replaces a step whole when throughSeq falls between its calls and their results', () => {
    const log = logBuilder();
    log.startRun('one'); // 1
    log.add(draft.stepStarted('s1')); // 2
    log.add(draft.stepCompleted('s1', { calls: [draft.call('c1'), draft.call('c2')] })); // 3
    log.add(draft.settled('c1', 'r1')); // 4
    log.add(draft.settled('c2', 'r2')); // 5
    log.add(draft.compacted('summary', 4)); // 6
    log.add(draft.stepStarted('s2')); // 7
    log.add(draft.stepCompleted('s2', { content: [{ type: 'text', text: 'done' }] })); // 8
    expect(projectHistory(log.facts, { provider: 'test.provider' })).toStrictEqual([
      summaryOf('summary'),
      { role: 'assistant', content: [{ type: 'text', text: 'done' }] },
    ]);
  });

  it('keeps a step whole when throughSeq falls between its request and its completion', () => {
    const log = logBuilder();
    log.startRun('one'); // 1
    log.add(draft.stepStarted('s1')); // 2
    log.add(draft.stepCompleted('s1', { calls: [draft.call('c1')] })); // 3
    log.add(draft.settled('c1', 'r1')); // 4
    log.add(draft.compacted('summary', 2)); // 5
    expect(projectHistory(log.facts, { provider: 'test.provider' })).toStrictEqual([
      summaryOf('summary'),
      {
        role: 'assistant',
        content: [{ type: 'tool-call', callId: 'c1', name: 'tool', input: {} }],
      },
      {
        role: 'tool',
        content: [{ type: 'tool-result', callId: 'c1', name: 'tool', text: 'r1', isError: false }],
      },
    ]);
  });
});

describe('what history leaves out', () => {
  it('leaves out a failed step, a step in flight and a call in flight, keeping the settled sibling', () => {
    const log = logBuilder();
    log.startRun('go');
    log.add(draft.stepStarted('s1'));
    log.add(draft.stepFailed('s1'));
    log.add(draft.stepStarted('s2'));
    log.add(draft.stepCompleted('s2', { calls: [draft.call('c1'), draft.call('c2')] }));
    log.add(draft.started('c1'));
    log.add(draft.started('c2'));
    log.add(draft.settled('c2', 'two'));
    expect(projectHistory(log.facts, { provider: 'test.provider' })).toStrictEqual([
      { role: 'user', content: 'go' },
      {
        role: 'assistant',
        content: [{ type: 'tool-call', callId: 'c2', name: 'tool', input: {} }],
      },
      {
        role: 'tool',
        content: [{ type: 'tool-result', callId: 'c2', name: 'tool', text: 'two', isError: false }],
      },
    ]);
    log.add(draft.stepStarted('s3'));
    expect(projectHistory(log.facts, { provider: 'test.provider' })).toHaveLength(3);
  });

  it('pairs reused callIds by step, and ignores results that match no call', () => {
    const log = logBuilder();
    log.startRun('go');
    log.add(draft.stepStarted('s1'));
    log.add(draft.stepCompleted('s1', { calls: [draft.call('call_1')] }));
    log.add(draft.settled('call_1', 'first'));
    log.add(draft.settled('call_9', 'stray'));
    log.add(draft.stepStarted('s2'));
    log.add(draft.stepCompleted('s2', { calls: [draft.call('call_1')] }));
    log.add(draft.settled('call_1', 'second'));
    log.add(draft.settled('call_1', 'duplicate'));
    const results = projectHistory(log.facts, { provider: 'test.provider' })
      .filter((message) => message.role === 'tool')
      .map((message) => message.content.map((part) => part.text));
    expect(results).toStrictEqual([['first'], ['second']]);
  });

  it('marks every outcome but success as an error result', () => {
    const outcomes = [
      'success',
      'error',
      'invalid',
      'denied',
      'withheld',
      'cancelled',
      'unknown',
    ] as const;
    const log = logBuilder();
    log.startRun('go');
    log.add(draft.stepStarted('s1'));
    log.add(
      draft.stepCompleted('s1', { calls: outcomes.map((outcome) => draft.call(`c_${outcome}`)) }),
    );
    for (const outcome of outcomes) log.add(draft.settled(`c_${outcome}`, outcome, outcome));
    const tool = projectHistory(log.facts, { provider: 'test.provider' })[2];
    expect(
      tool?.role === 'tool' && tool.content.map((part) => [part.text, part.isError]),
    ).toStrictEqual([
      ['success', false],
      ['error', true],
      ['invalid', true],
      ['denied', true],
      ['withheld', true],
      ['cancelled', true],
      ['unknown', true],
    ]);
  });
});
