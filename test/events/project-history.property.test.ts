import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Fact } from '../../events/facts.ts';
import { findDamage } from '../../events/find-damage.ts';
import type { ModelMessage } from '../../events/messages.ts';
import { planRecovery } from '../../events/plan-recovery.ts';
import { projectHistory } from '../../events/project-history.ts';
import { projectTurn } from '../../events/project-turn.ts';
import { factsToText, parseFacts } from './sample-logs.ts';
import { wellFormedLog } from './well-formed-log.ts';

/** Every way the messages break call/result pairing, as readable strings (empty: none). */
function pairingViolations(messages: readonly ModelMessage[]): string[] {
  const violations: string[] = [];
  messages.forEach((message, index) => {
    const next = messages[index + 1];
    if (message.role === 'assistant') {
      if (message.content.length === 0) violations.push(`empty assistant message at ${index}`);
      const calls = message.content.flatMap((part) =>
        part.type === 'tool-call' ? [part.callId] : [],
      );
      if (new Set(calls).size !== calls.length)
        violations.push(`repeated callId in message ${index}`);
      if (calls.length === 0) return;
      const results = next?.role === 'tool' ? next.content.map((part) => part.callId) : [];
      if (JSON.stringify(results) !== JSON.stringify(calls)) {
        violations.push(`calls ${calls} at ${index} answered by ${results} at ${index + 1}`);
      }
    }
    if (message.role === 'tool') {
      const previous = messages[index - 1];
      const hasCalls =
        previous?.role === 'assistant' &&
        previous.content.some((part) => part.type === 'tool-call');
      if (!hasCalls)
        violations.push(`tool message at ${index} does not follow its assistant message`);
      if (message.content.length === 0) violations.push(`empty tool message at ${index}`);
    }
  });
  return violations;
}

/** The latest compaction's `throughSeq` (0 without one). */
function compactedThrough(facts: readonly Fact[]): number {
  return facts.findLast((fact) => fact.type === 'compaction.completed')?.throughSeq ?? 0;
}

/** Ids of the steps history shows: completed after the latest compaction, in log order. */
function shownSteps(facts: readonly Fact[]): string[] {
  const through = compactedThrough(facts);
  return facts.flatMap((fact) =>
    fact.type === 'step.completed' &&
    fact.seq > through &&
    fact.content.some((part) => part.type === 'reasoning')
      ? [fact.stepId]
      : [],
  );
}

/**
 * The result texts history must show, worked out from the log independently of projectHistory:
 * every `tool.settled` of a call of a step completed after the latest compaction, grouped by
 * step in log order, in the step's call order (well-formed logs settle each call once).
 */
function expectedResults(facts: readonly Fact[]): string[] {
  const through = compactedThrough(facts);
  const texts: string[] = [];
  let calls: string[] = [];
  let settled = new Map<string, string>();
  const flush = () => {
    for (const callId of calls) {
      const text = settled.get(callId);
      if (text !== undefined) texts.push(text);
    }
  };
  for (const fact of facts) {
    if (fact.type === 'step.completed') {
      flush();
      calls = fact.seq > through ? fact.toolCalls.map((call) => call.callId) : [];
      settled = new Map();
    } else if (fact.type === 'tool.settled') {
      settled.set(fact.callId, fact.text);
    }
  }
  flush();
  return texts;
}

describe('projectHistory on random well-formed logs', () => {
  it('pairs every call with its one result right after it, and shows every result not compacted', () => {
    fc.assert(
      fc.property(wellFormedLog, fc.constantFrom('a.chat', 'b.chat'), (facts, provider) => {
        const messages = projectHistory(facts, { provider });
        expect(pairingViolations(messages)).toStrictEqual([]);
        const results = messages.flatMap((message) =>
          message.role === 'tool' ? message.content.map((part) => part.text) : [],
        );
        expect(results).toStrictEqual(expectedResults(facts));
      }),
      { numRuns: 300 },
    );
  });

  it('keeps reasoning for the provider that produced it, and only for it', () => {
    fc.assert(
      fc.property(wellFormedLog, (facts) => {
        const reasoningOf = (provider: string) =>
          projectHistory(facts, { provider })
            .flatMap((message) => (message.role === 'assistant' ? message.content : []))
            .filter((part) => part.type === 'reasoning')
            .map((part) => part.providerOptions?.a?.signature);
        const stepsBy = (provider: string) =>
          facts.flatMap((fact) =>
            fact.type === 'step.started' && fact.request.provider === provider ? [fact.stepId] : [],
          );
        for (const provider of ['a.chat', 'b.chat']) {
          for (const signature of reasoningOf(provider)) {
            expect(stepsBy(provider)).toContain(signature);
          }
          // …and keeps it for that provider: every shown step's reasoning, in step order.
          const shown = new Set(shownSteps(facts));
          expect(reasoningOf(provider)).toStrictEqual(
            stepsBy(provider).filter(
              (stepId, index, all) => all.indexOf(stepId) === index && shown.has(stepId),
            ),
          );
        }
      }),
      { numRuns: 100 },
    );
  });

  it('finds no damage, and projects identically after a JSON round trip', () => {
    fc.assert(
      fc.property(wellFormedLog, (facts) => {
        expect(findDamage(facts)).toStrictEqual([]);
        const reparsed = parseFacts(factsToText(facts));
        expect(JSON.stringify(projectHistory(reparsed, { provider: 'a.chat' }))).toBe(
          JSON.stringify(projectHistory(facts, { provider: 'a.chat' })),
        );
        expect(JSON.stringify(projectTurn(reparsed))).toBe(JSON.stringify(projectTurn(facts)));
        expect(JSON.stringify(planRecovery(reparsed))).toBe(JSON.stringify(planRecovery(facts)));
      }),
      { numRuns: 100 },
    );
  });
});
