// The side-by-side kill campaign (bench/dbos-kill-campaign.ts) and the per-step benchmark's DBOS
// side (bench/dbos-agent.ts) run by hand; what they count, and the loop DBOS runs, are checked
// here without a database.
import { describe, expect, it } from 'vitest';
import { conversationModel } from '../../bench/conversation.ts';
import { addExecutor, agentLoop } from '../../bench/dbos-agent.ts';
import { tallyCalls } from '../../bench/dbos-kill-campaign.ts';
import type { Fact } from '../../events/facts.ts';

/** The fields `tallyCalls` reads of a fact (the rest of a real fact does not matter to it). */
const fact = (fields: Record<string, unknown>) => fields as unknown as Fact;
const cut = (callId: string, check?: 'reconcile') =>
  fact({ type: 'tool.indeterminate', callId, ...(check && { check }) });
const reconciled = (callId: string, answer: 'done' | 'not-done') =>
  fact({ type: 'tool.reconciled', callId, answer });

describe('the kill campaign counts each cut call once, by what had happened when it was cut', () => {
  it('a call a person answered: it had run if the ledger has its row (it never ran again)', () => {
    const ledger: Record<string, number> = { ran: 1, notRan: 0 };
    const counts = tallyCalls([cut('ran'), cut('notRan')], (callId) => ledger[callId] ?? 0);
    expect(counts).toMatchObject({
      indeterminate: 2,
      answeredByPerson: 2,
      personCallsThatRan: 1,
      cutAfterEffect: 1,
    });
  });

  it('a call its reconcile found not done ran once afterwards: its row is not from before the cut', () => {
    const ledger: Record<string, number> = { done: 1, notDone: 1 };
    const counts = tallyCalls(
      [
        cut('done', 'reconcile'),
        reconciled('done', 'done'),
        cut('notDone', 'reconcile'),
        reconciled('notDone', 'not-done'),
      ],
      (callId) => ledger[callId] ?? 0,
    );
    expect(counts).toMatchObject({
      indeterminate: 2,
      answeredByPerson: 0,
      reconciledDone: 1,
      reconciledNotDone: 1,
      cutAfterEffect: 1,
    });
  });

  it('a call cut again while it was being recovered counts once, by its last answer', () => {
    const counts = tallyCalls(
      [
        cut('c', 'reconcile'),
        reconciled('c', 'not-done'),
        cut('c', 'reconcile'),
        reconciled('c', 'done'),
      ],
      () => 1,
    );
    expect(counts).toMatchObject({
      indeterminate: 1,
      indeterminateFacts: 2,
      reconciledDone: 1,
      reconciledNotDone: 0,
      cutAfterEffect: 1,
    });
  });
});

describe("the DBOS side's agent loop", () => {
  it('runs the 20-step conversation: a model call per step, the add tool per call', async () => {
    const calls: number[] = [];
    const steps = await agentLoop({
      model: conversationModel(20),
      steps: 20,
      durable: false,
      execute: async (call, workflowId) => {
        calls.push(await addExecutor(call, workflowId));
        return calls.at(-1) as number;
      },
    });
    expect(steps).toBe(20);
    // Step i calls add(i, i + 1) for i = 0 … 18.
    expect(calls).toEqual(Array.from({ length: 19 }, (_, index) => 2 * index + 1));
  });
});
