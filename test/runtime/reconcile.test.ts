import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type ScriptedStep, scriptedModel } from '../../adapters/scripted-model.ts';
import { toUIMessages } from '../../adapters/ui/ui-message-stream.ts';
import type { Fact } from '../../events/facts.ts';
import { sequentialIds } from '../../events/ids.ts';
import { projectTurn } from '../../events/project-turn.ts';
import type { RecoveredRun } from '../../runtime.ts';
import { memoryStore } from '../../store/memory/memory-store.ts';
import { defineTool } from '../../tools/define-tool.ts';
import type { ReconcileResult, ToolSet } from '../../tools/tool.ts';
import { deferred, isFactOf, testRuntime, until } from './runtime-helpers.ts';

/**
 * A "crash" in one process, as in recover.test.ts: the first runtime is abandoned while a call
 * executes (its execute never returns), and a second runtime recovers from the same store. The
 * tools call a payment service kept here: a ledger keyed by idempotency key.
 */
function paymentService() {
  const ledger = new Map<string, { cents: number; chargeId: string }>();
  return {
    ledger,
    charge(key: string, cents: number) {
      const entry = { cents, chargeId: `ch_${ledger.size + 1}` };
      ledger.set(key, entry);
      return entry;
    },
  };
}

type Service = ReturnType<typeof paymentService>;

/** A charge tool: execute charges by key; reconcile looks the key up (as Stripe's API allows). */
function chargeTool(
  service: Service,
  options: {
    /** In the first process: charge first (the effect lands) or not, then never return. */
    hang?: 'after-charge' | 'before-charge';
    reconcile?: (key: string) => ReconcileResult<{ chargeId: string }> | Promise<never>;
    permission?: 'allow' | 'ask';
    keys?: string[];
  },
) {
  const entered = deferred();
  const tool = defineTool({
    description: 'Charges a card.',
    inputSchema: z.object({ cents: z.number() }),
    permission: options.permission ?? 'allow',
    reconcileTimeoutMs: 200,
    execute: async ({ cents }, { idempotencyKey: key }) => {
      options.keys?.push(key);
      if (options.hang === 'before-charge') {
        entered.resolve();
        return new Promise<never>(() => {});
      }
      const { chargeId } = service.charge(key, cents);
      if (options.hang === 'after-charge') {
        entered.resolve();
        return new Promise<never>(() => {});
      }
      return { chargeId };
    },
    reconcile: async (_input, { idempotencyKey: key }) => {
      if (options.reconcile) return options.reconcile(key);
      const found = service.ledger.get(key);
      return found === undefined
        ? { status: 'not-done' as const }
        : { status: 'done' as const, output: { chargeId: found.chargeId } };
    },
  });
  return { tool, entered: entered.promise };
}

/** Starts a run in a first runtime until `entered`, then recovers it in a second one. */
async function crashAndRecover({
  firstTools,
  secondTools,
  steps,
  decideFirst,
}: {
  firstTools: ToolSet;
  secondTools: ToolSet;
  entered: Promise<void>;
  steps: ScriptedStep[];
  decideFirst?: boolean;
}) {
  const store = memoryStore();
  const generateId = sequentialIds();
  const first = testRuntime(store, {
    generateId,
    model: scriptedModel([{ toolCalls: [{ name: 'charge', input: { cents: 500 } }] }]),
    tools: firstTools,
  });
  const turn = await first.send({ sessionId: 's1', text: 'pay' });
  return { store, generateId, first, turn, steps, secondTools, decideFirst };
}

const facts = (all: readonly Fact[]) =>
  all
    .slice(all.findIndex((fact) => fact.type === 'tool.started'))
    .map((fact) => `${fact.type}${'answer' in fact ? `=${fact.answer}` : ''} → ${fact.state}`);

function resumed(report: RecoveredRun | undefined) {
  if (report === undefined || report.status === 'damaged') throw new Error('not resumable');
  return report;
}

describe('after a restart, a call that may have run is checked by its own tool', () => {
  it('done: reconcile finds the charge by its key; the call settles with the real output, never charged twice', async () => {
    const service = paymentService();
    const keys: string[] = [];
    const { tool, entered } = chargeTool(service, { hang: 'after-charge', keys });
    const run = await crashAndRecover({
      firstTools: { charge: tool },
      secondTools: {},
      entered,
      steps: [],
    });
    await entered;
    const model = scriptedModel([{ text: 'Paid: ch_1.' }]);
    const second = testRuntime(run.store, {
      generateId: run.generateId,
      model,
      tools: { charge: chargeTool(service, { keys }).tool },
    });
    const [report] = await second.recover();
    expect(resumed(report).status).toBe('resumed');
    expect(await resumed(report).turn.done).toMatchObject({
      status: 'completed',
      text: 'Paid: ch_1.',
    });
    expect([...service.ledger.values()]).toEqual([{ cents: 500, chargeId: 'ch_1' }]);
    expect(keys).toHaveLength(1);
    const log = await second.facts('s1');
    expect(facts(log)).toEqual([
      'tool.started → settlingTools.running',
      'tool.indeterminate → settlingTools.running',
      'run.recovered → settlingTools.reconciling',
      'tool.reconciled=done → settlingTools.reconciling',
      'tool.settled → projecting',
      'step.started → requesting.streaming',
      'step.completed → terminal',
      'run.ended → terminal',
    ]);
    expect(log.find((fact) => fact.type === 'tool.settled')).toMatchObject({
      outcome: 'success',
      text: '{"chargeId":"ch_1"}',
      output: { chargeId: 'ch_1' },
    });
    expect(JSON.stringify(model.requests[0]?.prompt)).toContain('ch_1');
    expect(await second.pending('s1')).toEqual([]);
    // What a UI shows: the read model and the chat message say it had run.
    const view = projectTurn(log).runs[0]?.steps[0]?.toolCalls[0];
    expect(view?.reconciled).toEqual({
      answer: 'done',
      reason: undefined,
      text: 'checked after a restart: it had run',
    });
    const parts = toUIMessages(log).at(-1)?.parts ?? [];
    expect(parts.filter((part) => part.type === 'data-reconciled')).toMatchObject([
      { data: { answer: 'done', text: 'checked after a restart: it had run' } },
    ]);
    expect(
      parts.some((part) => part.type === 'tool-charge' && part.state === 'output-available'),
    ).toBe(true);
    await second.close();
  });

  it('not-done: runs the call again once, with the same key, under the permission a person already gave', async () => {
    const service = paymentService();
    const keys: string[] = [];
    const { tool, entered } = chargeTool(service, {
      hang: 'before-charge',
      keys,
      permission: 'ask',
    });
    const run = await crashAndRecover({
      firstTools: { charge: tool },
      secondTools: {},
      entered,
      steps: [],
    });
    await until(run.turn, isFactOf('tool.permission.requested'));
    const [asked] = await run.first.pending('s1');
    await run.first.decide({
      sessionId: 's1',
      callId: 'call_1',
      decision: 'allow',
      inputHash: asked?.inputHash,
    });
    await entered;
    const second = testRuntime(run.store, {
      generateId: run.generateId,
      model: scriptedModel([{ text: 'Paid.' }]),
      tools: { charge: chargeTool(service, { keys, permission: 'ask' }).tool },
    });
    const [report] = await second.recover();
    expect(await resumed(report).turn.done).toMatchObject({ status: 'completed' });
    // The same key both times: the service would deduplicate a charge run again.
    expect(keys).toHaveLength(2);
    expect(new Set(keys).size).toBe(1);
    expect([...service.ledger.keys()]).toEqual([keys[0]]);
    const log = await second.facts('s1');
    expect(facts(log)).toEqual([
      'tool.started → settlingTools.running',
      'tool.indeterminate → settlingTools.running',
      'run.recovered → settlingTools.reconciling',
      'tool.reconciled=not-done → settlingTools.running',
      'tool.started → settlingTools.running',
      'tool.settled → projecting',
      'step.started → requesting.streaming',
      'step.completed → terminal',
      'run.ended → terminal',
    ]);
    const starts = log.filter((fact) => fact.type === 'tool.started').map((fact) => fact.id);
    expect(starts.map((id) => id.replace(/^.*:call_1:/, ''))).toEqual(['started', 'started-2']);
    // One person's decision: nobody was asked again.
    expect(log.filter((fact) => fact.type === 'tool.permission.requested')).toHaveLength(1);
    expect(projectTurn(log).runs[0]?.steps[0]?.toolCalls[0]?.reconciled?.text).toBe(
      'checked after a restart: it had not run, so it ran again',
    );
    await second.close();
  });

  it.each([
    [
      'says it cannot tell',
      () => ({ status: 'unknown' as const, reason: 'the ledger is being migrated' }),
      'the ledger is being migrated',
    ],
    [
      'throws',
      () => Promise.reject(new Error('ledger unreachable')),
      'reconcile threw: ledger unreachable',
    ],
    [
      'does not answer in time',
      () => new Promise<never>(() => {}),
      'reconcile did not answer within 200 ms',
    ],
  ] as const)(
    'unknown: when reconcile %s, a person is asked, and the question says what it answered',
    async (_name, answer, reason) => {
      const service = paymentService();
      const { tool, entered } = chargeTool(service, { hang: 'after-charge' });
      const run = await crashAndRecover({
        firstTools: { charge: tool },
        secondTools: {},
        entered,
        steps: [],
      });
      await entered;
      const second = testRuntime(run.store, {
        generateId: run.generateId,
        model: scriptedModel([{ text: 'I could not confirm the charge.' }]),
        tools: { charge: chargeTool(service, { reconcile: answer as never }).tool },
      });
      const [report] = await second.recover();
      await until(resumed(report).turn, isFactOf('tool.reconciled'));
      expect(await second.pending('s1')).toEqual([
        {
          kind: 'indeterminate',
          callId: 'call_1',
          name: 'charge',
          input: { cents: 500 },
          inputHash: expect.any(String),
          reconciled: { answer: 'unknown', reason },
        },
      ]);
      const parts = toUIMessages(await second.facts('s1')).at(-1)?.parts ?? [];
      expect(parts.filter((part) => part.type === 'data-reconciled')).toMatchObject([
        {
          data: {
            answer: 'unknown',
            text: `checked after a restart: it could not tell (${reason})`,
          },
        },
      ]);
      await second.decide({ sessionId: 's1', callId: 'call_1', decision: 'report-unknown' });
      expect(await resumed(report).turn.done).toMatchObject({ status: 'completed' });
      expect(service.ledger.size).toBe(1);
      await second.close();
    },
  );

  it('idempotent: a call of an idempotent tool runs again without asking anyone', async () => {
    const sent: string[] = [];
    const entered = deferred();
    let first = true;
    const notify = defineTool({
      description: 'Sends a notification, deduplicated by key.',
      inputSchema: z.object({ text: z.string() }),
      idempotent: true,
      execute: async ({ text }, { idempotencyKey: key }) => {
        sent.push(key);
        if (first) {
          first = false;
          entered.resolve();
          return new Promise<never>(() => {});
        }
        return `sent ${text}`;
      },
    });
    const store = memoryStore();
    const generateId = sequentialIds();
    const one = testRuntime(store, {
      generateId,
      model: scriptedModel([{ toolCalls: [{ name: 'notify', input: { text: 'hi' } }] }]),
      tools: { notify },
    });
    await one.send({ sessionId: 's1', text: 'tell them' });
    await entered.promise;
    const two = testRuntime(store, {
      generateId,
      model: scriptedModel([{ text: 'Told.' }]),
      tools: { notify },
    });
    const [report] = await two.recover();
    expect(await resumed(report).turn.done).toMatchObject({ status: 'completed', text: 'Told.' });
    expect(sent).toHaveLength(2);
    expect(new Set(sent).size).toBe(1);
    const log = await two.facts('s1');
    expect(log.find((fact) => fact.type === 'tool.reconciled')).toMatchObject({
      answer: 'idempotent',
    });
    expect(log.find((fact) => fact.type === 'tool.settled')).toMatchObject({
      outcome: 'success',
      text: 'sent hi',
    });
    await two.close();
  });
});
