import { validateUIMessages } from 'ai';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { scriptedModel } from '../../../adapters/scripted-model.ts';
import {
  decisionFromApproval,
  type TurnlogUIMessage,
  toUIMessageStream,
  toUIMessages,
} from '../../../adapters/ui/ui-message-stream.ts';
import { sequentialIds } from '../../../events/ids.ts';
import type { TurnHandle } from '../../../machines/effects/turn-channel.ts';
import { memoryStore } from '../../../store/memory/memory-store.ts';
import { defineTool } from '../../../tools/define-tool.ts';
import { deferred, testRuntime, until } from '../../runtime/runtime-helpers.ts';
import { asSent, chunkTypes, readLikeUseChat } from './ui-stream-reader.ts';

const saveNote = defineTool({
  description: 'Saves a note.',
  inputSchema: z.object({ title: z.string().min(1) }),
  permission: 'ask',
  execute: ({ title }) => ({ saved: title }),
});
const lookUp = defineTool({
  description: 'Looks a word up.',
  inputSchema: z.object({ word: z.string() }),
  execute: ({ word }) => {
    if (word === 'missing') throw new Error(`no entry for ${word}`);
    return `${word}: a word`;
  },
});

const user = (text: string): TurnlogUIMessage => ({
  id: 'client-message',
  role: 'user',
  parts: [{ type: 'text', text }],
});

/** Streams the run as `useChat` reads it, and checks the result is what the log rebuilds. */
async function streamed(turn: TurnHandle, facts: () => Promise<unknown[]>) {
  const result = await readLikeUseChat(toUIMessageStream(turn));
  const message = result.message as TurnlogUIMessage;
  await validateUIMessages({ messages: [user('x'), asSent(message)] });
  expect(toUIMessages((await facts()) as never).at(-1)).toEqual(asSent(message));
  return { ...result, message };
}

/** The message a client sends back after answering the approval `id`. */
function answer(message: TurnlogUIMessage, id: string, approved: boolean, reason?: string) {
  return asSent({
    ...message,
    parts: message.parts.map((part) =>
      'approval' in part && part.approval?.id === id
        ? {
            ...part,
            state: 'approval-responded',
            approval: { ...part.approval, approved, ...(reason === undefined ? {} : { reason }) },
          }
        : part,
    ),
  }) as TurnlogUIMessage;
}

const approvalOf = (message: TurnlogUIMessage, toolCallId: string) => {
  const part = message.parts.find(
    (candidate) => 'toolCallId' in candidate && candidate.toolCallId === toolCallId,
  );
  return (part as { approval?: { id: string } } | undefined)?.approval?.id ?? '';
};

describe('toUIMessageStream, read as useChat reads it', () => {
  it('streams text and reasoning as start/delta/end parts, then finishes with the step reason', async () => {
    const model = scriptedModel([{ reasoning: ['Short ', 'answer.'], text: ['Hello ', 'there.'] }]);
    const runtime = testRuntime(memoryStore(), { model });
    const turn = await runtime.send({ sessionId: 's', text: 'Hi' });
    const { message, chunks, errors } = await streamed(turn, () => runtime.facts('s'));

    expect(chunkTypes(chunks)).toEqual([
      'start',
      'message-metadata',
      'start-step',
      'message-metadata',
      'reasoning-start',
      'reasoning-delta',
      'reasoning-end',
      'text-start',
      'text-delta',
      'text-end',
      'finish-step',
      'message-metadata',
      'message-metadata',
      'finish',
    ]);
    // Deltas the reader had not reached yet arrive folded (the handle's replay is bounded,
    // issue 29 item 5): one or two, the text whole either way.
    const deltas = chunks.flatMap((chunk) => (chunk.type === 'text-delta' ? [chunk.delta] : []));
    expect(deltas.join('')).toBe('Hello there.');
    expect(deltas.length).toBeLessThanOrEqual(2);
    expect(chunks.at(-1)).toEqual({
      type: 'finish',
      finishReason: 'stop',
    });
    expect(errors).toEqual([]);
    expect(asSent(message)).toEqual({
      id: turn.runId,
      role: 'assistant',
      metadata: {
        sessionId: 's',
        runId: turn.runId,
        seq: 4,
        state: 'terminal',
        status: 'completed',
        reason: 'end_turn',
      },
      parts: [
        { type: 'step-start' },
        { type: 'reasoning', id: 'step_1:0', text: 'Short answer.', state: 'done' },
        { type: 'text', text: 'Hello there.', state: 'done' },
      ],
    });
  });

  it('shows calls nobody is asked about as streamText does: input-available, then output or error, no approval', async () => {
    const model = scriptedModel([
      {
        toolCalls: [
          { name: 'lookUp', input: { word: 'turn' } },
          { name: 'lookUp', input: { word: 'missing' } },
          { name: 'lookUp', input: { term: 'no word' } },
        ],
      },
      { text: 'Looked up.' },
    ]);
    const runtime = testRuntime(memoryStore(), { model, tools: { lookUp } });
    const turn = await runtime.send({ sessionId: 's', text: 'Look these up' });
    const { message, chunks } = await streamed(turn, () => runtime.facts('s'));
    expect(chunks.filter((chunk) => chunk.type.startsWith('tool-approval'))).toEqual([]);
    const tools = message.parts.filter((part) => part.type === 'tool-lookUp');
    expect(asSent(tools)).toEqual([
      {
        type: 'tool-lookUp',
        toolCallId: 'call_1',
        state: 'output-available',
        input: { word: 'turn' },
        output: 'turn: a word',
      },
      {
        type: 'tool-lookUp',
        toolCallId: 'call_2',
        state: 'output-error',
        input: { word: 'missing' },
        errorText: 'The tool failed: no entry for missing',
      },
      {
        type: 'tool-lookUp',
        toolCallId: 'call_3',
        state: 'output-error',
        input: { term: 'no word' },
        errorText:
          'Invalid input for tool "lookUp"; the call was not run. Fix these fields and call it again:\n' +
          '- word: Invalid input: expected string, but it is missing',
      },
    ]);
    expect(message.parts.at(-1)).toEqual({ type: 'text', text: 'Looked up.', state: 'done' });
  });

  it('asks with a tool-approval-request bound to the input hash, ends there, and goes on once allowed', async () => {
    const model = scriptedModel([
      { text: 'Saving.', toolCalls: [{ name: 'saveNote', input: { title: 'milk' } }] },
      { text: 'Saved.' },
    ]);
    const runtime = testRuntime(memoryStore(), { model, tools: { saveNote } });
    const turn = await runtime.send({ sessionId: 's', text: 'Remember milk' });
    const parked = await streamed(turn, () => runtime.facts('s'));
    const [pending] = await runtime.pending('s');
    const id = approvalOf(parked.message, 'call_1');
    expect(id).toBe(`permission:step_1:call_1:${encodeURIComponent(pending?.inputHash ?? '')}`);
    expect(parked.chunks.at(-1)).toEqual({
      type: 'finish',
      finishReason: 'tool-calls',
      messageMetadata: {
        sessionId: 's',
        runId: turn.runId,
        seq: 4,
        state: 'awaitingPermission',
        status: 'awaiting',
      },
    });
    expect(asSent(parked.message.parts.slice(-2))).toEqual([
      {
        type: 'tool-saveNote',
        toolCallId: 'call_1',
        state: 'approval-requested',
        input: { title: 'milk' },
        approval: { id, descriptor: { kind: 'permission', approve: 'allow', deny: 'deny' } },
      },
      {
        type: 'data-decision',
        id,
        data: {
          kind: 'permission',
          toolCallId: 'call_1',
          toolName: 'saveNote',
          approve: 'allow',
          deny: 'deny',
        },
      },
    ]);

    const sentBack = answer(parked.message, id, true);
    await validateUIMessages({ messages: [user('Remember milk'), sentBack] });
    const decision = decisionFromApproval({ id, approved: true });
    expect(decision).toEqual({
      callId: 'call_1',
      decision: 'allow',
      inputHash: pending?.inputHash,
    });
    await runtime.decide({ sessionId: 's', ...decision });
    const continued = await readLikeUseChat(
      toUIMessageStream(turn, { afterSeq: parked.message.metadata?.seq }),
      sentBack,
    );
    expect(continued.chunks[0]).toEqual({
      type: 'start',
      messageId: turn.runId,
      messageMetadata: {
        sessionId: 's',
        runId: turn.runId,
        seq: 5,
        state: 'settlingTools.running',
        status: 'running',
      },
    });
    const final = continued.message as TurnlogUIMessage;
    await validateUIMessages({ messages: [user('Remember milk'), asSent(final)] });
    expect(asSent(final)).toEqual(toUIMessages(await runtime.facts('s')).at(-1));
    expect(asSent(final.parts.slice(2))).toEqual([
      {
        type: 'tool-saveNote',
        toolCallId: 'call_1',
        state: 'output-available',
        input: { title: 'milk' },
        output: { saved: 'milk' },
        approval: {
          id,
          approved: true,
          descriptor: { kind: 'permission', approve: 'allow', deny: 'deny' },
        },
      },
      {
        type: 'data-decision',
        id,
        data: {
          kind: 'permission',
          toolCallId: 'call_1',
          toolName: 'saveNote',
          approve: 'allow',
          deny: 'deny',
          decision: 'allow',
        },
      },
      { type: 'step-start' },
      { type: 'text', text: 'Saved.', state: 'done' },
    ]);
    expect(final.metadata).toMatchObject({ status: 'completed', reason: 'end_turn', seq: 10 });
  });

  it('ends where the run waits, not at a decision already followed by the next one', async () => {
    const model = scriptedModel([
      {
        toolCalls: [
          { name: 'saveNote', input: { title: 'a' } },
          { name: 'saveNote', input: { title: 'b' } },
        ],
      },
      { text: 'Both saved.' },
    ]);
    const runtime = testRuntime(memoryStore(), { model, tools: { saveNote } });
    const turn = await runtime.send({ sessionId: 's', text: 'Save a and b' });
    const parked = (await readLikeUseChat(toUIMessageStream(turn))).message as TurnlogUIMessage;
    expect(parked.metadata).toMatchObject({ seq: 5, status: 'awaiting' });
    // Both answers recorded before the continuation starts: the first leaves the run waiting
    // (state awaitingPermission), the second lets it go on. The stream shows both, and the rest.
    let sentBack = parked;
    for (const callId of ['call_1', 'call_2']) {
      const id = approvalOf(parked, callId);
      sentBack = answer(sentBack, id, true);
      await runtime.decide({ sessionId: 's', ...decisionFromApproval({ id, approved: true }) });
    }
    await validateUIMessages({ messages: [user('Save a and b'), sentBack] });
    const final = (await readLikeUseChat(toUIMessageStream(turn, { afterSeq: 5 }), sentBack))
      .message as TurnlogUIMessage;
    expect(asSent(final)).toEqual(toUIMessages(await runtime.facts('s')).at(-1));
    expect(final.metadata).toMatchObject({ status: 'completed' });
    expect(final.parts.at(-1)).toEqual({ type: 'text', text: 'Both saved.', state: 'done' });
  });

  it('shows a denied ask as output-denied with the reason on its approval', async () => {
    const model = scriptedModel([
      { toolCalls: [{ name: 'saveNote', input: { title: 'secret' } }] },
      { text: 'Not saved.' },
    ]);
    const runtime = testRuntime(memoryStore(), { model, tools: { saveNote } });
    const turn = await runtime.send({ sessionId: 's', text: 'Remember the secret' });
    const parked = await streamed(turn, () => runtime.facts('s'));
    const id = approvalOf(parked.message, 'call_1');
    await runtime.decide({
      sessionId: 's',
      ...decisionFromApproval({ id, approved: false, reason: 'Not this one.' }),
    });
    const final = (
      await readLikeUseChat(
        toUIMessageStream(turn, { afterSeq: 4 }),
        answer(parked.message, id, false, 'Not this one.'),
      )
    ).message as TurnlogUIMessage;
    await validateUIMessages({ messages: [user('x'), asSent(final)] });
    expect(asSent(final)).toEqual(toUIMessages(await runtime.facts('s')).at(-1));
    expect(asSent(final.parts[1])).toEqual({
      type: 'tool-saveNote',
      toolCallId: 'call_1',
      state: 'output-denied',
      input: { title: 'secret' },
      approval: {
        id,
        approved: false,
        reason: 'Not this one.',
        descriptor: { kind: 'permission', approve: 'allow', deny: 'deny' },
      },
    });
  });

  it('shows a withheld call as output-error saying why it did not run', async () => {
    const model = scriptedModel([
      {
        text: 'Let me save',
        toolCalls: [{ name: 'saveNote', input: { title: 'long' } }],
        finishReason: 'length',
      },
      { text: 'I was cut off.' },
    ]);
    const runtime = testRuntime(memoryStore(), { model, tools: { saveNote } });
    const turn = await runtime.send({ sessionId: 's', text: 'Save it' });
    const { message } = await streamed(turn, () => runtime.facts('s'));
    const settled = (await runtime.facts('s')).find((fact) => fact.type === 'tool.settled');
    expect(settled).toMatchObject({ outcome: 'withheld' });
    expect(asSent(message.parts[2])).toEqual({
      type: 'tool-saveNote',
      toolCallId: 'call_1',
      state: 'output-error',
      input: { title: 'long' },
      errorText: settled?.type === 'tool.settled' ? settled.text : '',
    });
    expect((message.parts[2] as { errorText: string }).errorText).toMatch(
      /^This call was not run: /,
    );
  });

  it('asks a person about an indeterminate call after a crash: report-unknown lets the run go on', async () => {
    const store = memoryStore();
    const started = deferred();
    const hang = defineTool({
      description: 'Never returns.',
      inputSchema: z.object({}),
      execute: () => {
        started.resolve();
        return new Promise<string>(() => {});
      },
    });
    const first = testRuntime(store, {
      model: scriptedModel([{ toolCalls: [{ name: 'hang' }] }]),
      tools: { hang },
    });
    await first.send({ sessionId: 's', text: 'Go' });
    await started.promise;
    const facts = await first.facts('s');
    await first.close();

    // The process "died" after tool.started: a new runtime on the same log recovers the run.
    const ids = sequentialIds();
    const runtime = testRuntime(memoryStore({ facts }), {
      model: scriptedModel([{ text: 'I cannot tell whether it ran.' }]),
      tools: { hang },
      generateId: (prefix) => `after-restart-${ids(prefix)}`,
    });
    const [recovered] = await runtime.recover();
    if (recovered?.status !== 'parked')
      throw new Error(`expected a parked run, got ${recovered?.status}`);
    const parked = await streamed(recovered.turn, () => runtime.facts('s'));
    const id = approvalOf(parked.message, 'call_1');
    expect(id).toMatch(/^indeterminate:step_1:call_1:sha256%3A/);
    expect(asSent(parked.message.parts.slice(1))).toEqual([
      {
        type: 'tool-hang',
        toolCallId: 'call_1',
        state: 'approval-requested',
        input: {},
        title: 'May have run: it started before a restart and never finished',
        toolMetadata: { mayHaveRun: true },
        approval: {
          id,
          descriptor: { kind: 'indeterminate', approve: 'report-unknown', deny: 'abort' },
          requestReason:
            'This call started before the process stopped and never finished: it may or may not have run, and it will not run again. Approve to tell the model its outcome is unknown; deny to abort the run.',
        },
      },
      {
        type: 'data-decision',
        id,
        data: {
          kind: 'indeterminate',
          toolCallId: 'call_1',
          toolName: 'hang',
          approve: 'report-unknown',
          deny: 'abort',
        },
      },
    ]);

    const sentBack = answer(parked.message, id, true);
    await validateUIMessages({ messages: [user('Go'), sentBack] });
    await runtime.decide({ sessionId: 's', ...decisionFromApproval({ id, approved: true }) });
    const final = (
      await readLikeUseChat(
        toUIMessageStream(recovered.turn, { afterSeq: parked.message.metadata?.seq }),
        sentBack,
      )
    ).message as TurnlogUIMessage;
    await validateUIMessages({ messages: [user('Go'), asSent(final)] });
    expect(asSent(final)).toEqual(toUIMessages(await runtime.facts('s')).at(-1));
    expect(asSent(final.parts[1])).toEqual({
      type: 'tool-hang',
      toolCallId: 'call_1',
      state: 'output-error',
      input: {},
      errorText:
        'The outcome of this call is unknown: it may or may not have run. Inspect the current state before retrying.',
      title: 'May have run: it started before a restart and never finished',
      toolMetadata: { mayHaveRun: true },
      approval: {
        id,
        requestReason: expect.any(String),
        approved: true,
        descriptor: { kind: 'indeterminate', approve: 'report-unknown', deny: 'abort' },
      },
    });
    expect(final.metadata).toMatchObject({ status: 'completed' });
  });

  it('removes text a stopped step streamed (the log has none of it) and ends with abort', async () => {
    const model = scriptedModel([{ text: ['Half an ', 'answer'], stall: true }]);
    const runtime = testRuntime(memoryStore(), { model });
    const turn = await runtime.send({ sessionId: 's', text: 'Long question' });
    await until(turn, (event) => event.type === 'text.delta' && event.text === 'answer');
    await runtime.stop({ sessionId: 's', reason: 'enough' });
    const { message, chunks } = await streamed(turn, () => runtime.facts('s'));
    expect(chunkTypes(chunks).slice(-6)).toEqual([
      'message-metadata',
      'text-end',
      'reset-step',
      'finish-step',
      'message-metadata',
      'abort',
    ]);
    expect(chunks.at(-1)).toEqual({ type: 'abort', reason: 'enough' });
    expect(asSent(message)).toEqual({
      id: turn.runId,
      role: 'assistant',
      metadata: expect.objectContaining({ status: 'aborted', reason: 'stop_requested' }),
      parts: [{ type: 'step-start' }],
    });
  });

  it('answers an ask left open by a stop as denied, with the cancellation as its reason', async () => {
    const model = scriptedModel([{ toolCalls: [{ name: 'saveNote', input: { title: 'x' } }] }]);
    const runtime = testRuntime(memoryStore(), { model, tools: { saveNote } });
    const turn = await runtime.send({ sessionId: 's', text: 'Save x' });
    await until(turn, (event) => event.type === 'tool.permission.requested');
    await runtime.stop({ sessionId: 's', reason: 'changed my mind' });
    await turn.done;
    // Replayed after the run went on, the stream does not stop at the ask: the log has more.
    const { message: final } = await streamed(turn, () => runtime.facts('s'));
    expect(asSent(final.parts[1])).toEqual({
      type: 'tool-saveNote',
      toolCallId: 'call_1',
      state: 'output-denied',
      input: { title: 'x' },
      approval: {
        id: approvalOf(final, 'call_1'),
        descriptor: { kind: 'permission', approve: 'allow', deny: 'deny' },
        approved: false,
        reason:
          'This call was cancelled; it was not run. The run was stopped before this call ran.',
      },
    });
    expect(final.metadata).toMatchObject({ status: 'aborted', reason: 'stop_requested' });
  });

  it('ends a failed run with an error chunk that says why, then finish', async () => {
    const model = scriptedModel([
      { error: { status: 401, message: 'Incorrect API key provided' } },
    ]);
    const runtime = testRuntime(memoryStore(), { model });
    const turn = await runtime.send({ sessionId: 's', text: 'Hi' });
    const { message, chunks, errors } = await streamed(turn, () => runtime.facts('s'));
    expect(chunks.slice(-2)).toEqual([
      { type: 'error', errorText: 'The run failed (provider_error): Incorrect API key provided' },
      { type: 'finish', finishReason: 'error' },
    ]);
    expect(errors).toEqual(['The run failed (provider_error): Incorrect API key provided']);
    expect(asSent(message.parts)).toEqual([{ type: 'step-start' }]);
    expect(message.metadata).toMatchObject({ status: 'failed', reason: 'provider_error' });
  });

  it('errors the stream when the runtime closes under it: a disconnect the client resumes from', async () => {
    const started = deferred();
    const hang = defineTool({
      description: 'Never returns.',
      inputSchema: z.object({}),
      execute: () => {
        started.resolve();
        return new Promise<string>(() => {});
      },
    });
    const runtime = testRuntime(memoryStore(), {
      model: scriptedModel([{ toolCalls: [{ name: 'hang' }] }]),
      tools: { hang },
    });
    const turn = await runtime.send({ sessionId: 's', text: 'Go' });
    const reader = toUIMessageStream(turn).getReader();
    await started.promise;
    const closing = runtime.close();
    const read = async () => {
      while (!(await reader.read()).done) {}
    };
    await expect(read()).rejects.toMatchObject({ name: 'RuntimeClosedError' });
    await closing;
  });
});
