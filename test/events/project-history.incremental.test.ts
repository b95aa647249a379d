import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Fact, FactOf } from '../../events/facts.ts';
import { requestSeq, stepMessages, summaryMessage } from '../../events/history-messages.ts';
import { type ModelMessage, type UserPart, userContent } from '../../events/messages.ts';
import { createHistoryProjection, projectHistory } from '../../events/project-history.ts';
import { collectRuns } from '../../events/run-facts.ts';
import { sampleLogs } from '../helpers/sample-logs.ts';
import { draft, logBuilder } from './log-builder.ts';
import { wellFormedLog } from './well-formed-log.ts';

/**
 * The full projection the straightforward way, as the incremental one must answer at every
 * prefix: every piece of every run placed by (`seq`, then after its projected fact), in one
 * stable sort, then laid end to end.
 */
function fullProjection(facts: readonly Fact[], provider: string): ModelMessage[] {
  const compaction = facts.findLast(
    (fact): fact is FactOf<'compaction.completed'> => fact.type === 'compaction.completed',
  );
  const throughSeq = compaction?.throughSeq ?? 0;
  const placed: { seq: number; after: number; messages: ModelMessage[] }[] = [];
  const user = (seq: number, content: string | UserPart[]) => ({
    seq,
    after: 0,
    messages: [{ role: 'user' as const, content }],
  });
  for (const run of collectRuns(facts)) {
    const started = run.runStarted[0];
    if (started !== undefined && started.seq > throughSeq)
      placed.push(user(started.seq, userContent(started.input)));
    for (const steering of run.steering)
      if (steering.seq > throughSeq) placed.push(user(steering.seq, steering.text));
    for (const step of run.steps) {
      const completed = step.completions[0];
      if (completed === undefined || completed.seq <= throughSeq) continue;
      placed.push({
        seq: requestSeq(step, completed),
        after: 1,
        messages: stepMessages(step, completed, provider),
      });
    }
  }
  placed.sort((left, right) => left.seq - right.seq || left.after - right.after);
  return [
    ...(compaction === undefined ? [] : [summaryMessage(compaction)]),
    ...placed.flatMap((piece) => piece.messages),
  ];
}

const providers = ['a.chat', 'b.chat'] as const;

/** Well-formed logs whose requests were projected through any earlier fact: any placement, ties too. */
const anyPlacementLog = wellFormedLog.chain((facts) =>
  fc
    .array(fc.nat(), { minLength: facts.length, maxLength: facts.length })
    .map((picks) =>
      facts.map((fact, index) =>
        fact.type === 'step.started'
          ? { ...fact, projectedThroughSeq: (picks[index] ?? 0) % fact.seq }
          : fact,
      ),
    ),
);

describe('createHistoryProjection', () => {
  it('equals the full projection at every prefix of a growing log, whatever provider asks', () => {
    fc.assert(
      fc.property(
        wellFormedLog,
        fc.array(fc.constantFrom(...providers), { minLength: 1, maxLength: 5 }),
        (facts, asking) => {
          const history = createHistoryProjection();
          const grown: Fact[] = [];
          facts.forEach((fact, index) => {
            grown.push(fact);
            const provider = asking[index % asking.length] as string;
            expect(history.project(grown, { provider })).toStrictEqual(
              fullProjection(grown, provider),
            );
          });
          expect(projectHistory(facts, { provider: 'a.chat' })).toStrictEqual(
            fullProjection(facts, 'a.chat'),
          );
        },
      ),
      { numRuns: 300 },
    );
  });

  it('equals the full projection when it reads several facts at a time', () => {
    fc.assert(
      fc.property(wellFormedLog, fc.array(fc.integer({ min: 1, max: 7 })), (facts, strides) => {
        const history = createHistoryProjection();
        const grown: Fact[] = [];
        let next = 0;
        for (const stride of [...strides, facts.length]) {
          grown.push(...facts.slice(next, next + stride));
          next += stride;
          expect(history.project(grown, { provider: 'a.chat' })).toStrictEqual(
            fullProjection(grown, 'a.chat'),
          );
          if (next >= facts.length) break;
        }
      }),
      { numRuns: 200 },
    );
  });

  it('equals the full projection at every prefix, wherever the requests were projected through', () => {
    fc.assert(
      fc.property(anyPlacementLog, (facts) => {
        const history = createHistoryProjection();
        const grown: Fact[] = [];
        for (const fact of facts) {
          grown.push(fact);
          expect(history.project(grown, { provider: 'a.chat' })).toStrictEqual(
            fullProjection(grown, 'a.chat'),
          );
        }
      }),
      { numRuns: 300 },
    );
  });

  it('equals the full projection when the log is handed on in copies, read again, or cut', () => {
    // The next run of a session gets a copy of the log (the same fact objects): the projection
    // goes on from where it stopped. Facts read again from a store are other objects, and a
    // shorter log is another log: both are projected from the start. All equal the full one.
    const how = fc.constantFrom('grow', 'copy', 'reread', 'cut', 'provider');
    fc.assert(
      fc.property(
        wellFormedLog,
        fc.array(fc.tuple(how, fc.integer({ min: 1, max: 9 }))),
        (facts, moves) => {
          const history = createHistoryProjection();
          let grown: Fact[] = [];
          let next = 0;
          let provider = 'a.chat';
          for (const [move, stride] of [...moves, ['grow', facts.length] as const]) {
            if (move === 'copy') grown = [...grown];
            else if (move === 'reread') grown = structuredClone(grown);
            else if (move === 'cut') {
              next = Math.max(0, next - stride);
              grown = grown.slice(0, next);
            } else if (move === 'provider') provider = provider === 'a.chat' ? 'b.chat' : 'a.chat';
            grown.push(...facts.slice(next, next + stride));
            next = Math.min(facts.length, next + stride);
            expect(history.project(grown, { provider })).toStrictEqual(
              fullProjection(grown, provider),
            );
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  for (const { name, facts } of sampleLogs()) {
    it(`equals the full projection at every prefix of the sample log ${name}`, () => {
      const history = createHistoryProjection();
      const grown: Fact[] = [];
      for (const fact of facts) {
        grown.push(fact);
        expect(history.project(grown, { provider: 'openai.responses' })).toStrictEqual(
          fullProjection(grown, 'openai.responses'),
        );
      }
    });
  }

  it('projects again from the start for another array, or one that no longer starts with what it read', () => {
    const log = logBuilder();
    log.startRun('first question');
    const history = createHistoryProjection();
    const facts = [...log.facts];
    expect(history.project(facts, { provider: 'a.chat' })).toStrictEqual([
      { role: 'user', content: 'first question' },
    ]);
    const other = logBuilder({ idPrefix: 'other' });
    other.startRun('another session');
    facts.splice(0, facts.length, ...other.facts);
    expect(history.project(facts, { provider: 'a.chat' })).toStrictEqual([
      { role: 'user', content: 'another session' },
    ]);
    expect(history.project(log.facts, { provider: 'a.chat' })).toStrictEqual([
      { role: 'user', content: 'first question' },
    ]);
  });

  it("goes on from a copy that starts with the facts it read (the next run's log), not from facts read again", () => {
    const log = logBuilder();
    log.startRun('first question');
    const history = createHistoryProjection();
    const [question] = history.project([...log.facts], { provider: 'a.chat' });
    log.startRun('second question');
    const copy = [...log.facts];
    const kept = history.project(copy, { provider: 'a.chat' });
    expect(kept[0]).toBe(question);
    expect(kept).toHaveLength(2);
    const reread = history.project(structuredClone(copy), { provider: 'a.chat' });
    expect(reread).toStrictEqual(kept);
    expect(reread[0]).not.toBe(question);
  });

  it('places steering that arrived during a step after the step, whose results come later', () => {
    const log = logBuilder();
    log.startRun('go');
    log.add(draft.stepStarted('step_1', { provider: 'a.chat', projectedThroughSeq: 1 }));
    log.add(draft.steering('also b'));
    const history = createHistoryProjection();
    const grown = [...log.facts];
    expect(history.project(grown, { provider: 'a.chat' })).toStrictEqual([
      { role: 'user', content: 'go' },
      { role: 'user', content: 'also b' },
    ]);
    for (const fact of [
      log.add(draft.stepCompleted('step_1', { calls: [draft.call('call_1')] })),
      log.add(draft.allowed('call_1')),
      log.add(draft.started('call_1')),
      log.add(draft.settled('call_1', 'done', 'success')),
    ]) {
      grown.push(fact);
      expect(history.project(grown, { provider: 'a.chat' })).toStrictEqual(
        fullProjection(grown, 'a.chat'),
      );
    }
    expect(history.project(grown, { provider: 'a.chat' }).map((message) => message.role)).toEqual([
      'user',
      'assistant',
      'tool',
      'user',
    ]);
  });
});
