import { validateUIMessages } from 'ai';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { scriptedModel } from '../../../adapters/scripted-model.ts';
import { ChunkTranslator } from '../../../adapters/ui/ui-message-chunks.ts';
import {
  decisionFromApproval,
  type TurnlogUIMessage,
  toUIMessageStream,
  toUIMessages,
} from '../../../adapters/ui/ui-message-stream.ts';
import type { Fact, TransientEvent } from '../../../events/facts.ts';
import { memoryStore } from '../../../store/memory/memory-store.ts';
import { defineTool } from '../../../tools/define-tool.ts';
import { DecisionMismatchError } from '../../../tools/permission-policy.ts';
import { factsToText, parseFacts } from '../../events/sample-logs.ts';
import { wellFormedLog } from '../../events/well-formed-log.ts';
import { factBuilder, runStartedDraft } from '../../helpers/fact-builder.ts';
import { sampleLogs } from '../../helpers/sample-logs.ts';
import { testRuntime } from '../../runtime/runtime-helpers.ts';
import { asSent, readLikeUseChat } from './ui-stream-reader.ts';

/** Each run's assistant message as the AI SDK's own reader builds it from the translator's chunks. */
async function readBySdk(facts: readonly Fact[]): Promise<TurnlogUIMessage[]> {
  const messages: TurnlogUIMessage[] = [];
  for (const runId of new Set(facts.map((fact) => fact.runId))) {
    const runFacts = facts.filter((fact) => fact.runId === runId);
    const { message } = await readLikeUseChat(
      toUIMessageStream({ sessionId: runFacts[0]?.sessionId ?? '', runId, events: runFacts }),
    );
    messages.push(message as TurnlogUIMessage);
  }
  return messages;
}

/** toUIMessages' assistant messages, read by the SDK from the stream of the same facts. */
async function expectSameAsSdk(facts: readonly Fact[]) {
  const fromLog = toUIMessages(facts).filter((message) => message.role === 'assistant');
  // A regenerated answer is not on the page: the SDK's reading of its run is left out too.
  const superseded = new Set(
    facts.flatMap((fact) => (fact.type === 'run.started' && fact.regenerates) || []),
  );
  const bySdk = (await readBySdk(facts)).filter((message) => !superseded.has(message.id));
  expect(fromLog).toEqual(bySdk.map(asSent));
}

describe('toUIMessages', () => {
  it.each(sampleLogs())(
    'builds valid messages from the sample log $name, as the SDK reads them',
    async ({ facts }) => {
      const messages = toUIMessages(facts);
      // A run that regenerates another replaces that run's answer: no message of its own.
      const newMessages = facts.filter(
        (fact) => fact.type === 'run.started' && fact.regenerates === undefined,
      );
      expect(messages.map((message) => message.role)).toEqual(
        newMessages.flatMap(() => ['user', 'assistant']),
      );
      await validateUIMessages({ messages: asSent(messages) });
      // Facts → JSON → facts: the same messages.
      expect(toUIMessages(parseFacts(factsToText(facts)))).toEqual(messages);
      // Up to the first park a stream and the log agree; parked runs are the interrupted ones.
      const parked = facts.some((fact) => fact.state === 'awaitingPermission');
      if (!parked) await expectSameAsSdk(facts);
    },
  );

  it('shows the permission log: an allowed call with its output, then a denied one with its reason', () => {
    const facts = sampleLogs().find((log) => log.name === 'permission')?.facts ?? [];
    const [, first, , second] = toUIMessages(facts);
    expect(first?.parts.find((part) => part.type === 'tool-runCommand')).toMatchObject({
      state: 'output-available',
      output: { exitCode: 0, stdout: '', stderr: '' },
      approval: { approved: true },
    });
    expect(second?.parts.find((part) => part.type === 'tool-runCommand')).toMatchObject({
      state: 'output-denied',
      approval: { approved: false, reason: 'Not yet, I want to review the diff first.' },
    });
  });

  it('folds chunks as the SDK does, for any well-formed log', async () => {
    await fc.assert(
      fc.asyncProperty(wellFormedLog, async (facts) => {
        const messages = toUIMessages(facts);
        await validateUIMessages({ messages: asSent(messages) });
        // Streams stop at a park; compare the runs that never parked.
        const unparked = facts.filter(
          (fact) =>
            !facts.some(
              (other) => other.runId === fact.runId && other.state === 'awaitingPermission',
            ),
        );
        await expectSameAsSdk(unparked);
      }),
      { numRuns: 40 },
    );
  });
});

describe('a live stream ends as the log rebuilds it', () => {
  const echo = defineTool({
    description: 'Echoes.',
    inputSchema: z.object({ say: z.string() }),
    permission: ({ say }) =>
      say.startsWith('ask') ? 'ask' : say.startsWith('no') ? 'deny' : 'allow',
    execute: ({ say }) => {
      if (say.endsWith('!')) throw new Error('too loud');
      return { said: say };
    },
  });
  const text = fc.array(fc.string({ minLength: 1, maxLength: 8 }), { maxLength: 3 });
  const step = fc.record({
    reasoning: text,
    text,
    calls: fc.array(fc.constantFrom('hello', 'hello!', 'ask me', 'no way'), { maxLength: 3 }),
    cut: fc.boolean(),
  });

  it('for random runs of text, reasoning, calls, asks, denials and errors', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(step, { minLength: 1, maxLength: 3 }),
        fc.array(fc.boolean(), { minLength: 9, maxLength: 9 }),
        async (steps, answers) => {
          const model = scriptedModel([
            ...steps.map((planned) => ({
              ...(planned.reasoning.length > 0 ? { reasoning: planned.reasoning } : {}),
              ...(planned.text.length > 0 ? { text: planned.text } : {}),
              toolCalls: planned.calls.map((say) => ({ name: 'echo', input: { say } })),
              ...(planned.cut && planned.calls.length > 0
                ? { finishReason: 'length' as const }
                : {}),
            })),
            { text: 'Done.' },
          ]);
          const runtime = testRuntime(memoryStore(), { model, tools: { echo } });
          const turn = await runtime.send({ sessionId: 's', text: 'Go' });
          let message: TurnlogUIMessage | undefined;
          let afterSeq: number | undefined;
          for (let round = 0; round < 10; round += 1) {
            const read = await readLikeUseChat(toUIMessageStream(turn, { afterSeq }), message);
            message = read.message ?? message;
            const pending = await runtime.pending('s');
            if (pending.length === 0) break;
            afterSeq = message?.metadata?.seq;
            for (const open of pending) {
              const part = message?.parts.find(
                (candidate) => 'toolCallId' in candidate && candidate.toolCallId === open.callId,
              ) as { approval: { id: string } };
              const approved = answers[round] ?? true;
              await runtime.decide({
                sessionId: 's',
                ...decisionFromApproval({ id: part.approval.id, approved }),
              });
            }
          }
          await turn.done;
          const fromLog = toUIMessages(await runtime.facts('s'));
          expect(fromLog.at(-1)).toEqual(asSent(message));
          await validateUIMessages({ messages: asSent(fromLog) });
          await runtime.close();
        },
      ),
      { numRuns: 30 },
    );
  });

  it('replaces streamed text that differs from step.completed with the logged content', () => {
    const fact = factBuilder({ sessionId: 's', runId: 'r' });
    const translator = new ChunkTranslator({ sessionId: 's', runId: 'r' });
    const delta = (text: string): TransientEvent => ({
      type: 'text.delta',
      sessionId: 's',
      runId: 'r',
      stepId: 'step_1',
      text,
    });
    const events = [
      fact(runStartedDraft()),
      fact({
        type: 'step.started',
        stepId: 'step_1',
        attempt: 1,
        request: {
          provider: 'p',
          modelId: 'm',
          messageCount: 1,
          tools: [],
          activeTools: undefined,
          inputHash: 'h',
        },
      }),
      delta('Hel'),
      delta('lo'),
      fact({
        type: 'step.completed',
        stepId: 'step_1',
        finishReason: { unified: 'stop', raw: undefined },
        usage: {
          inputTokens: 1,
          outputTokens: 1,
          reasoningTokens: undefined,
          cachedInputTokens: undefined,
        },
        content: [{ type: 'text', text: 'Hello!' }],
        toolCalls: [],
        response: { id: undefined, modelId: undefined },
      }),
    ];
    const chunks = events.flatMap((event) => translator.translate(event));
    expect(chunks.filter((chunk) => chunk.type !== 'message-metadata')).toEqual([
      { type: 'start-step' },
      { type: 'text-start', id: 'step_1:0' },
      { type: 'text-delta', id: 'step_1:0', delta: 'Hel' },
      { type: 'text-delta', id: 'step_1:0', delta: 'lo' },
      { type: 'text-end', id: 'step_1:0' },
      { type: 'reset-step' },
      { type: 'text-start', id: 'step_1:0' },
      { type: 'text-delta', id: 'step_1:0', delta: 'Hello!' },
      { type: 'text-end', id: 'step_1:0' },
      { type: 'finish-step' },
    ]);
  });
});

describe('decisionFromApproval', () => {
  const binding = 'permission:step_1:call%3A1:sha256%3Aabc';

  it('maps a permission answer to allow or deny, and an indeterminate one to report-unknown or abort', () => {
    expect(decisionFromApproval({ id: binding, approved: true })).toEqual({
      callId: 'call:1',
      decision: 'allow',
      inputHash: 'sha256:abc',
    });
    expect(decisionFromApproval({ id: binding, approved: false, reason: 'No.' })).toEqual({
      callId: 'call:1',
      decision: 'deny',
      inputHash: 'sha256:abc',
      reason: 'No.',
    });
    const indeterminate = 'indeterminate:step_2:call_1:sha256%3Adef';
    expect(decisionFromApproval({ id: indeterminate, approved: true }).decision).toBe(
      'report-unknown',
    );
    expect(decisionFromApproval({ id: indeterminate, approved: false }).decision).toBe('abort');
  });

  it.each([
    ['approval_123', 'is not an approval id from toUIMessageStream()'],
    ['permission:step_1:call_1', 'is not an approval id from toUIMessageStream()'],
    ['maybe:step_1:call_1:sha256%3Aabc', 'is not an approval id from toUIMessageStream()'],
    ['permission:step_1::sha256%3Aabc', 'is not an approval id from toUIMessageStream()'],
    ['permission:step_1:%E0%A4%A:h', 'is not an approval id from toUIMessageStream()'],
    ['policy:step_1:call_1:sha256%3Aabc', 'was decided by the permission policy'],
  ])('refuses %s with an InvalidArgumentError', (id, message) => {
    expect(() => decisionFromApproval({ id, approved: true })).toThrow(
      expect.objectContaining({
        name: 'InvalidArgumentError',
        argument: 'approval.id',
        message: expect.stringContaining(message),
      }),
    );
  });

  it('refuses an approval without an answer', () => {
    expect(() => decisionFromApproval({ id: binding } as never)).toThrow(
      expect.objectContaining({ name: 'InvalidArgumentError', argument: 'approval.approved' }),
    );
  });

  it('binds the decision to the input the approval was requested for: another hash is refused', async () => {
    const saveNote = defineTool({
      description: 'Saves.',
      inputSchema: z.object({ title: z.string() }),
      permission: 'ask',
      execute: () => 'saved',
    });
    const runtime = testRuntime(memoryStore(), {
      model: scriptedModel([{ toolCalls: [{ name: 'saveNote', input: { title: 'a' } }] }, {}]),
      tools: { saveNote },
    });
    const turn = await runtime.send({ sessionId: 's', text: 'Save a' });
    const { message } = await readLikeUseChat(toUIMessageStream(turn));
    const part = message?.parts.find((candidate) => candidate.type === 'tool-saveNote') as {
      approval: { id: string };
    };
    const forged = part.approval.id.replace(/sha256%3A[0-9a-f]+$/, 'sha256%3A00');
    const attempt = runtime.decide({
      sessionId: 's',
      ...decisionFromApproval({ id: forged, approved: true }),
    });
    await expect(attempt).rejects.toSatisfy(DecisionMismatchError.isInstance);
    expect(await runtime.pending('s')).toHaveLength(1);
    await runtime.close();
  });
});
