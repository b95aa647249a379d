import type { LanguageModelV4CallOptions } from '@ai-sdk/provider';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { scriptedModel } from '../../adapters/scripted-model.ts';
import { toUIMessages } from '../../adapters/ui/ui-message-stream.ts';
import type { Fact } from '../../events/facts.ts';
import { sequentialIds } from '../../events/ids.ts';
import { createRuntime, type Runtime } from '../../runtime.ts';
import { NoActiveRunError } from '../../runtime-errors.ts';
import type { EventStore } from '../../store/event-store.ts';
import { memoryStore } from '../../store/memory/memory-store.ts';
import { defineTool } from '../../tools/define-tool.ts';
import { DecisionConflictError, DecisionMismatchError } from '../../tools/permission-policy.ts';
import { testSchema } from '../helpers/postgres.ts';
import { isFactOf, until } from './runtime-helpers.ts';

/**
 * The promises an approval keeps, each checked in one process (a restart: a second runtime on
 * the same store) and across workers (two workers on one PostgreSQL schema: the run parks, and
 * whichever worker a decision reaches takes it over):
 * 1. an approval's id is the same before and after a crash or a takeover;
 * 2. a decision applies only to the exact input hash it was shown;
 * 3. it is used once: the call runs once, the same decision again changes nothing;
 * 4. it is refused after the run ended, and for a call another decision already settled;
 * 5. a decision racing a stop is refused with the same error class in both: NoActiveRunError.
 */

/** Until the prompt holds a tool result the model calls `charge`; then it answers. */
function model() {
  const step = (call: LanguageModelV4CallOptions) =>
    call.prompt.some((message) => message.role === 'tool')
      ? { text: 'Charged.' }
      : {
          toolCalls: [
            { id: 'call_a', name: 'charge', input: { cents: 500 } },
            { id: 'call_b', name: 'charge', input: { cents: 700 } },
          ],
        };
  return scriptedModel(Array.from({ length: 10 }, () => step));
}

function chargeTool(executions: number[]) {
  return defineTool({
    description: 'Charges a card.',
    inputSchema: z.object({ cents: z.number() }),
    permission: 'ask',
    execute: ({ cents }) => {
      executions.push(cents);
      return `charged ${cents}`;
    },
  });
}

interface Setup {
  /** The runtime the run starts on. */
  first: Runtime;
  /**
   * After a crash (one process: a new runtime on the store recovers the run; the first is
   * dead) or a takeover (another worker): `runtime`, and `other`, where a second decision comes
   * from (one process: the same runtime; workers: the first worker).
   */
  second(): Promise<{ runtime: Runtime; other: Runtime }>;
  executions: number[];
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
});

const setups: [string, () => Setup][] = [
  [
    'one process',
    () => {
      const store: EventStore = memoryStore();
      const generateId = sequentialIds();
      const executions: number[] = [];
      const runtime = () =>
        createRuntime({
          model: model(),
          tools: { charge: chargeTool(executions) },
          store,
          generateId,
        });
      return {
        first: runtime(),
        executions,
        async second() {
          // The first process is abandoned (never closed); the second recovers the run.
          const next = runtime();
          await next.recover();
          return { runtime: next, other: next };
        },
      };
    },
  ],
  [
    'workers on PostgreSQL',
    () => {
      const database = testSchema('approvals');
      const executions: number[] = [];
      const runtimes: Runtime[] = [];
      cleanups.push(async () => {
        await Promise.all(runtimes.map((runtime) => runtime.close().catch(() => {})));
        await database.drop();
      });
      const worker = (id: string) => {
        const ids = sequentialIds();
        const runtime = createRuntime({
          model: model(),
          tools: { charge: chargeTool(executions) },
          store: database.open(),
          generateId: (prefix) => `${ids(prefix)}_${id}`,
          worker: { id, leaseMs: 60_000 },
        });
        runtimes.push(runtime);
        return runtime;
      };
      const first = worker('a');
      return { first, executions, second: async () => ({ runtime: worker('b'), other: first }) };
    },
  ],
];

/** The approval ids a UI shows for a session (toUIMessages' tool-approval-request parts). */
function approvalIds(facts: readonly Fact[]): string[] {
  return toUIMessages(facts).flatMap((message) =>
    message.parts.flatMap((part) =>
      'approval' in part && part.approval !== undefined ? [part.approval.id] : [],
    ),
  );
}

/** The run's `run.ended`, once it is in the log. */
async function ended(runtime: Runtime) {
  await expect
    .poll(async () => (await runtime.facts('s1')).at(-1)?.type, { timeout: 20_000 })
    .toBe('run.ended');
  return (await runtime.facts('s1')).at(-1);
}

describe.each(setups)('approvals (%s)', (_name, setup) => {
  async function asked(runtime: Runtime) {
    const turn = await runtime.send({ sessionId: 's1', text: 'charge 5 and 7' });
    await until(turn, isFactOf('tool.permission.requested'));
    await expect.poll(async () => (await runtime.pending('s1')).length).toBe(2);
    const [a, b] = await runtime.pending('s1');
    if (a === undefined || b === undefined) throw new Error('nothing pending');
    return { a, b };
  }
  const decision = (
    pending: { callId: string; inputHash: string },
    verdict: 'allow' | 'deny' = 'allow',
  ) => ({
    sessionId: 's1',
    callId: pending.callId,
    decision: verdict,
    inputHash: pending.inputHash,
  });

  it('1. keeps the approval ids and the pending decisions across a crash or a takeover', async () => {
    const { first, second } = setup();
    const { a, b } = await asked(first);
    const before = approvalIds(await first.facts('s1'));
    expect(before).toHaveLength(2);
    const { runtime } = await second();
    expect(await runtime.pending('s1')).toEqual([a, b]);
    expect(approvalIds(await runtime.facts('s1'))).toEqual(before);
  });

  it('2. applies a decision only to the input hash it was shown', async () => {
    const { first, second, executions } = setup();
    const { a, b } = await asked(first);
    const { runtime } = await second();
    // b's hash on a's call: it was shown another input.
    await expect(runtime.decide({ ...decision(a), inputHash: b.inputHash })).rejects.toSatisfy(
      DecisionMismatchError.isInstance,
    );
    expect(executions).toEqual([]);
    expect(await runtime.pending('s1')).toEqual([a, b]);
  });

  it('3. uses a decision once: the same decision again is a no-op, the call runs once', async () => {
    const { first, second, executions } = setup();
    const { a, b } = await asked(first);
    const { runtime, other } = await second();
    await runtime.decide(decision(a));
    await other.decide(decision(a));
    await runtime.decide(decision(b));
    expect(await ended(runtime)).toMatchObject({ status: 'completed' });
    expect(executions.sort()).toEqual([500, 700]);
    const decided = (await runtime.facts('s1')).filter(isFactOf('tool.permission.decided'));
    expect(decided).toHaveLength(2);
  });

  it('4. refuses a decision for a call another decision settled, and any decision after the run ended', async () => {
    const { first, second, executions } = setup();
    const { a, b } = await asked(first);
    const { runtime, other } = await second();
    await runtime.decide(decision(a, 'deny'));
    // The run still waits for b: a's decision is in the log, and another one is refused.
    await expect(other.decide(decision(a, 'allow'))).rejects.toSatisfy(
      DecisionConflictError.isInstance,
    );
    await runtime.decide(decision(b, 'deny'));
    expect(await ended(runtime)).toMatchObject({ status: 'completed' });
    await expect(other.decide(decision(b, 'allow'))).rejects.toSatisfy(NoActiveRunError.isInstance);
    expect(executions).toEqual([]);
  });

  it('5. refuses a decision that loses a race with a stop with NoActiveRunError', async () => {
    const { first, second, executions } = setup();
    const { a, b } = await asked(first);
    const { runtime, other } = await second();
    // Raced: the stop and the decision sent at once, from two places.
    const [stopped, decided] = await Promise.allSettled([
      runtime.stop({ sessionId: 's1', reason: 'changed my mind' }),
      other.decide(decision(a)),
    ]);
    expect(stopped.status).toBe('fulfilled');
    if (decided.status === 'rejected') {
      expect(NoActiveRunError.isInstance(decided.reason)).toBe(true);
    }
    expect(await ended(runtime)).toMatchObject({ status: 'aborted', reason: 'stop_requested' });
    // After the stop: refused the same way, wherever it is sent.
    for (const where of [runtime, other]) {
      await expect(where.decide(decision(b))).rejects.toSatisfy(NoActiveRunError.isInstance);
    }
    expect(executions).toEqual([]);
  });
});
