import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { scriptedModel } from '../../adapters/scripted-model.ts';
import type { Fact } from '../../events/facts.ts';
import type { Runtime } from '../../runtime.ts';
import { SessionBusyError } from '../../runtime-errors.ts';
import type { EventStore } from '../../store/event-store.ts';
import { lowdbStore } from '../../store/folder/lowdb-store.ts';
import { memoryStore } from '../../store/memory/memory-store.ts';
import { defineTool } from '../../tools/define-tool.ts';
import { UnknownDecisionError } from '../../tools/permission-policy.ts';
import { addTool, deferred, isFactOf, runFacts, testRuntime, until } from './runtime-helpers.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A store, and how to open it again after its runtime closed (a restart). */
interface StoreHarness {
  store: EventStore;
  reopen: (facts: Fact[]) => EventStore;
}

const stores: [string, () => StoreHarness][] = [
  ['memoryStore', () => ({ store: memoryStore(), reopen: (facts) => memoryStore({ facts }) })],
  [
    'lowdbStore',
    () => {
      const dir = mkdtempSync(join(tmpdir(), 'turnlog-runtime-'));
      dirs.push(dir);
      return { store: lowdbStore({ dir }), reopen: () => lowdbStore({ dir }) };
    },
  ],
];

/** Closes the runtime, opens a new one on the same log: facts and history are identical. */
async function expectSameAfterReopen(runtime: Runtime, harness: StoreHarness, sessionId = 's1') {
  const facts = await runtime.facts(sessionId);
  const history = await runtime.history(sessionId);
  await runtime.close();
  const reopened = testRuntime(harness.reopen(facts), { model: scriptedModel([]) });
  expect(JSON.stringify(await reopened.facts(sessionId))).toBe(JSON.stringify(facts));
  expect(await reopened.history(sessionId)).toEqual(history);
  expect(await reopened.recover()).toEqual([]);
  await reopened.close();
}

describe.each(stores)('createRuntime on %s', (_name, makeHarness) => {
  it('runs a text turn: events in order, every fact once, deltas before their step.completed', async () => {
    const harness = makeHarness();
    const { store } = harness;
    const model = scriptedModel([
      { text: ['Hel', 'lo', '!'], usage: { inputTokens: 3, outputTokens: 3 } },
    ]);
    const runtime = testRuntime(store, { model });
    const turn = await runtime.send({ sessionId: 's1', text: 'hi' });
    const events = [];
    for await (const event of turn.events) events.push(event);
    const result = await turn.done;
    expect(result).toEqual({
      status: 'completed',
      reason: 'end_turn',
      text: 'Hello!',
      usage: {
        inputTokens: 3,
        outputTokens: 3,
        reasoningTokens: undefined,
        cachedInputTokens: undefined,
      },
      steps: 1,
    });
    const facts = await runtime.facts('s1');
    const factEvents = events.filter((event) => 'seq' in event);
    expect(factEvents).toEqual(facts);
    expect(events.map((event) => event.type)).toEqual([
      'run.started',
      'step.started',
      'text.delta',
      'text.delta',
      'text.delta',
      'step.completed',
      'run.ended',
    ]);
    expect(facts.map((fact) => [fact.type, fact.state])).toEqual([
      ['run.started', 'projecting'],
      ['step.started', 'requesting.streaming'],
      ['step.completed', 'terminal'],
      ['run.ended', 'terminal'],
    ]);
    expect(facts.map((fact) => fact.seq)).toEqual([1, 2, 3, 4]);
    expect(await runtime.history('s1')).toEqual([
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: [{ type: 'text', text: 'Hello!' }] },
    ]);
    await expectSameAfterReopen(runtime, harness);
  });

  it('runs a tool turn: the proven call executes exactly once with its raw value', async () => {
    const harness = makeHarness();
    const { store } = harness;
    const { tool, executions } = addTool();
    const model = scriptedModel([
      { toolCalls: [{ name: 'add', input: { a: 2, b: 3 } }] },
      { text: 'It is 5.' },
    ]);
    const runtime = testRuntime(store, { model, tools: { add: tool } });
    const turn = await runtime.send({ sessionId: 's1', text: 'What is 2 + 3?' });
    expect(await turn.done).toMatchObject({
      status: 'completed',
      reason: 'end_turn',
      text: 'It is 5.',
      steps: 2,
    });
    expect(executions).toEqual([{ a: 2, b: 3 }]);
    const facts = await runtime.facts('s1');
    expect(facts.map((fact) => fact.type)).toEqual([
      'run.started',
      'step.started',
      'step.completed',
      'tool.permission.decided',
      'tool.started',
      'tool.settled',
      'step.started',
      'step.completed',
      'run.ended',
    ]);
    expect(model.requests).toHaveLength(2);
    expect(await runtime.history('s1')).toEqual([
      { role: 'user', content: 'What is 2 + 3?' },
      {
        role: 'assistant',
        content: [{ type: 'tool-call', callId: 'call_1', name: 'add', input: { a: 2, b: 3 } }],
      },
      {
        role: 'tool',
        content: [
          { type: 'tool-result', callId: 'call_1', name: 'add', text: '5', isError: false },
        ],
      },
      { role: 'assistant', content: [{ type: 'text', text: 'It is 5.' }] },
    ]);
    await expectSameAfterReopen(runtime, harness);
  });

  it('parks on a permission ask, lists it in pending(), and resumes when decide() allows it', async () => {
    const harness = makeHarness();
    const { store } = harness;
    const { tool, executions } = addTool('ask');
    const model = scriptedModel([
      { toolCalls: [{ name: 'add', input: { a: 1, b: 1 } }] },
      { text: 'Two.' },
    ]);
    const runtime = testRuntime(store, { model, tools: { add: tool } });
    const turn = await runtime.send({ sessionId: 's1', text: 'add' });
    const asked = await until(turn, isFactOf('tool.permission.requested'));
    expect(asked).toMatchObject({
      state: 'awaitingPermission',
      callId: 'call_1',
      input: { a: 1, b: 1 },
    });
    expect(await runtime.pending('s1')).toEqual([
      {
        kind: 'permission',
        callId: 'call_1',
        name: 'add',
        input: { a: 1, b: 1 },
        inputHash: expect.stringMatching(/^sha256:/),
      },
    ]);
    await expect(runtime.send({ sessionId: 's1', text: 'again' })).rejects.toSatisfy(
      SessionBusyError.isInstance,
    );
    await expect(
      runtime.decide({ sessionId: 's1', callId: 'call_9', decision: 'allow' }),
    ).rejects.toSatisfy(UnknownDecisionError.isInstance);
    expect(executions).toEqual([]);
    await runtime.decide({ sessionId: 's1', callId: 'call_1', decision: 'allow', reason: 'fine' });
    expect(await turn.done).toMatchObject({ status: 'completed', text: 'Two.' });
    expect(executions).toEqual([{ a: 1, b: 1 }]);
    expect(await runtime.pending('s1')).toEqual([]);
    const decided = (await runtime.facts('s1')).find(
      (fact) => fact.type === 'tool.permission.decided',
    );
    expect(decided).toMatchObject({
      decision: 'allow',
      by: 'user',
      reason: 'fine',
      inputHash: asked.type === 'tool.permission.requested' ? asked.inputHash : '',
    });
    await expectSameAfterReopen(runtime, harness);
  });

  it('takes a steering message during a tool into the next request', async () => {
    const harness = makeHarness();
    const { store } = harness;
    const entered = deferred();
    const release = deferred();
    const slow = defineTool({
      description: 'Waits.',
      inputSchema: z.object({}),
      execute: async () => {
        entered.resolve();
        await release.promise;
        return 'done';
      },
    });
    const model = scriptedModel([{ toolCalls: [{ name: 'slow' }] }, { text: 'Noted both.' }]);
    const runtime = testRuntime(store, { model, tools: { slow } });
    const turn = await runtime.send({ sessionId: 's1', text: 'start' });
    await entered.promise;
    await runtime.steer({ sessionId: 's1', text: 'also check the docs' });
    release.resolve();
    expect(await turn.done).toMatchObject({ status: 'completed', text: 'Noted both.' });
    const history = await runtime.history('s1');
    expect(history.map((message) => message.role)).toEqual([
      'user',
      'assistant',
      'tool',
      'user',
      'assistant',
    ]);
    expect(history[3]).toEqual({ role: 'user', content: 'also check the docs' });
    const secondPrompt = JSON.stringify(model.requests[1]?.prompt);
    expect(secondPrompt).toContain('also check the docs');
    await expectSameAfterReopen(runtime, harness);
  });

  it('stops mid-stream: the request is aborted and the run ends aborted with no step.completed', async () => {
    const harness = makeHarness();
    const { store } = harness;
    const model = scriptedModel([{ text: ['partial '], stall: true }]);
    const signals: (AbortSignal | undefined)[] = [];
    const doStream = model.doStream.bind(model);
    model.doStream = (options) => {
      signals.push(options.abortSignal);
      return doStream(options);
    };
    const runtime = testRuntime(store, { model });
    const turn = await runtime.send({ sessionId: 's1', text: 'go' });
    await until(turn, isFactOf('text.delta' as Fact['type']));
    await runtime.stop({ sessionId: 's1', reason: 'user pressed stop' });
    expect(await turn.done).toMatchObject({
      status: 'aborted',
      reason: 'stop_requested',
      steps: 0,
    });
    const types = (await runtime.facts('s1')).map((fact) => fact.type);
    expect(types).toEqual(['run.started', 'step.started', 'run.stop.requested', 'run.ended']);
    expect(signals.map((signal) => signal?.aborted)).toEqual([true]);
    await expectSameAfterReopen(runtime, harness);
  });

  it('stops mid-tool: the tool sees the abort and the call settles before run.ended', async () => {
    const harness = makeHarness();
    const { store } = harness;
    const entered = deferred();
    let sawAbort = false;
    const waits = defineTool({
      description: 'Waits for its signal.',
      inputSchema: z.object({}),
      execute: (_input, { signal }) =>
        new Promise((_resolve, reject) => {
          entered.resolve();
          signal.addEventListener('abort', () => {
            sawAbort = true;
            reject(new Error('aborted'));
          });
        }),
    });
    const model = scriptedModel([{ toolCalls: [{ name: 'waits' }] }]);
    const runtime = testRuntime(store, { model, tools: { waits } });
    const turn = await runtime.send({ sessionId: 's1', text: 'go' });
    await entered.promise;
    await runtime.stop({ sessionId: 's1' });
    expect(await turn.done).toMatchObject({ status: 'aborted', reason: 'stop_requested' });
    expect(sawAbort).toBe(true);
    const facts = runFacts(await runtime.facts('s1'), turn.runId);
    expect(facts.slice(-3).map((fact) => [fact.type, fact.state])).toEqual([
      ['run.stop.requested', 'settlingTools.stopping'],
      ['tool.settled', 'terminal'],
      ['run.ended', 'terminal'],
    ]);
    expect(facts.at(-2)).toMatchObject({ outcome: 'cancelled' });
    await expectSameAfterReopen(runtime, harness);
  });
});

describe('createRuntime on lowdbStore, reopened', () => {
  it('a new runtime on the same dir sees identical facts and history', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'turnlog-reopen-'));
    dirs.push(dir);
    const { tool } = addTool('ask');
    const model = scriptedModel([
      {
        reasoning: { text: 'think', signature: 'sig' },
        toolCalls: [{ name: 'add', input: { a: 4, b: 5 } }],
      },
      { text: 'Nine.' },
    ]);
    const first = testRuntime(lowdbStore({ dir }), { model, tools: { add: tool } });
    const turn = await first.send({ sessionId: 'reopen', text: 'add 4 and 5' });
    await until(turn, isFactOf('tool.permission.requested'));
    await first.decide({ sessionId: 'reopen', callId: 'call_1', decision: 'allow' });
    await turn.done;
    const facts = await first.facts('reopen');
    const history = await first.history('reopen');
    await first.close();

    const second = testRuntime(lowdbStore({ dir }), {
      model: scriptedModel([]),
      tools: { add: tool },
    });
    expect(await second.facts('reopen')).toEqual(facts);
    expect(JSON.stringify(await second.facts('reopen'))).toBe(JSON.stringify(facts));
    expect(await second.history('reopen')).toEqual(history);
    expect(await second.recover()).toEqual([]);
    await second.close();
  });
});
