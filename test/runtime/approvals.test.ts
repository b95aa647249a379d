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
import {
  DecisionConflictError,
  DecisionMismatchError,
  UnknownDecisionError,
} from '../../tools/permission-policy.ts';
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
      : { toolCalls: [{ id: 'call_c', name: 'charge', input: { cents: 500 } }] };
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
  /** After a crash (one process: a new runtime on the store) or a takeover (another worker). */
  second(): Promise<Runtime>;
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
          return next;
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
      return { first: worker('a'), executions, second: async () => worker('b') };
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

describe.each(setups)('approvals (%s)', (_name, setup) => {
  async function asked(runtime: Runtime) {
    const turn = await runtime.send({ sessionId: 's1', text: 'charge 5' });
    await until(turn, isFactOf('tool.permission.requested'));
    const [pending] = await runtime.pending('s1');
    if (pending === undefined) throw new Error('nothing pending');
    return { turn, pending };
  }

  it('1. keeps the approval id and the pending decision across a crash or a takeover', async () => {
    const { first, second } = setup();
    const { pending } = await asked(first);
    const before = approvalIds(await first.facts('s1'));
    expect(before).toHaveLength(1);
    const next = await second();
    expect(await next.pending('s1')).toEqual([pending]);
    expect(approvalIds(await next.facts('s1'))).toEqual(before);
  });

  it('2. applies a decision only to the input hash it was shown', async () => {
    const { first, second, executions } = setup();
    const { pending } = await asked(first);
    const next = await second();
    const wrong = { sessionId: 's1', callId: pending.callId, decision: 'allow' as const };
    await expect(next.decide({ ...wrong, inputHash: 'sha256:0000' })).rejects.toSatisfy(
      DecisionMismatchError.isInstance,
    );
    expect(executions).toEqual([]);
    expect(await next.pending('s1')).toEqual([pending]);
  });

  it('3. uses a decision once: the call runs once, the same decision again is a no-op, another is refused', async () => {
    const { first, second, executions } = setup();
    const { turn, pending } = await asked(first);
    const next = await second();
    const decision = {
      sessionId: 's1',
      callId: pending.callId,
      decision: 'allow' as const,
      inputHash: pending.inputHash,
    };
    await next.decide(decision);
    expect(await turn.done).toMatchObject({ status: 'completed', text: 'Charged.' });
    await first.decide(decision);
    await expect(first.decide({ ...decision, decision: 'deny' })).rejects.toSatisfy(
      DecisionConflictError.isInstance,
    );
    expect(executions).toEqual([500]);
    const decided = (await next.facts('s1')).filter(isFactOf('tool.permission.decided'));
    expect(decided).toHaveLength(1);
  });

  it('4. refuses a decision after the run ended, and for a call another decision settled', async () => {
    const { first, second, executions } = setup();
    const { turn, pending } = await asked(first);
    const next = await second();
    await next.decide({ sessionId: 's1', callId: pending.callId, decision: 'deny' });
    expect(await turn.done).toMatchObject({ status: 'completed' });
    await expect(
      first.decide({ sessionId: 's1', callId: pending.callId, decision: 'allow' }),
    ).rejects.toSatisfy(DecisionConflictError.isInstance);
    await expect(
      first.decide({ sessionId: 's1', callId: 'call_other', decision: 'allow' }),
    ).rejects.toSatisfy(
      (error) => UnknownDecisionError.isInstance(error) || NoActiveRunError.isInstance(error),
    );
    expect(executions).toEqual([]);
  });

  it('5. refuses a decision that loses a race with a stop with NoActiveRunError', async () => {
    const { first, second, executions } = setup();
    const { turn, pending } = await asked(first);
    const next = await second();
    await next.stop({ sessionId: 's1', reason: 'changed my mind' });
    await expect(
      first.decide({
        sessionId: 's1',
        callId: pending.callId,
        decision: 'allow',
        inputHash: pending.inputHash,
      }),
    ).rejects.toSatisfy(NoActiveRunError.isInstance);
    expect(await turn.done).toMatchObject({ status: 'aborted', reason: 'stop_requested' });
    expect(executions).toEqual([]);
  });
});
