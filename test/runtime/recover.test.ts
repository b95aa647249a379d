import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { scriptedModel } from '../../adapters/scripted-model.ts';
import type { Fact } from '../../events/facts.ts';
import { sequentialIds } from '../../events/ids.ts';
import { memoryStore } from '../../store/memory-store.ts';
import { defineTool } from '../../tools/define-tool.ts';
import { addTool, deferred, isFactOf, testRuntime, until } from './runtime-helpers.ts';

/**
 * A "crash" in one process: the first runtime is abandoned mid-run (never closed, its pending
 * work never finishes) and a second runtime recovers from the same store.
 */
describe('runtime.recover()', () => {
  it('parks a started, unsettled call as indeterminate; report-unknown settles it without running it again', async () => {
    const store = memoryStore();
    // Two runtimes on one log (a restart): ids must not repeat across them.
    const generateId = sequentialIds();
    const entered = deferred();
    let executions = 0;
    const hangs = defineTool({
      description: 'Never returns in the first process.',
      inputSchema: z.object({ path: z.string() }),
      execute: () => {
        executions += 1;
        entered.resolve();
        return new Promise<string>(() => {});
      },
    });
    const first = testRuntime(store, {
      generateId,
      model: scriptedModel([{ toolCalls: [{ name: 'hangs', input: { path: 'a.md' } }] }]),
      tools: { hangs },
    });
    const turn = await first.send({ sessionId: 's1', text: 'write it' });
    await entered.promise;

    const model = scriptedModel([{ text: 'I will check a.md before retrying.' }]);
    const second = testRuntime(store, { generateId, model, tools: { hangs } });
    const [report] = await second.recover();
    expect(report).toMatchObject({
      sessionId: 's1',
      runId: turn.runId,
      interruptedIn: 'settlingTools.running',
      indeterminate: ['call_1'],
      status: 'parked',
    });
    expect(await second.pending('s1')).toEqual([
      {
        kind: 'indeterminate',
        callId: 'call_1',
        name: 'hangs',
        input: { path: 'a.md' },
        inputHash: expect.any(String),
      },
    ]);
    await expect(
      second.decide({ sessionId: 's1', callId: 'call_1', decision: 'allow' }),
    ).rejects.toThrow(/indeterminate/);
    await second.decide({ sessionId: 's1', callId: 'call_1', decision: 'report-unknown' });
    const result = await report?.turn.done;
    expect(result).toMatchObject({
      status: 'completed',
      text: 'I will check a.md before retrying.',
    });
    expect(executions).toBe(1);
    const facts = await second.facts('s1');
    const tail = facts.slice(facts.findIndex((fact) => fact.type === 'tool.started'));
    expect(tail.map((fact) => [fact.type, fact.state])).toEqual([
      ['tool.started', 'settlingTools.running'],
      ['tool.indeterminate', 'settlingTools.running'],
      ['run.recovered', 'awaitingPermission'],
      ['tool.permission.decided', 'settlingTools.running'],
      ['tool.settled', 'projecting'],
      ['step.started', 'requesting.streaming'],
      ['step.completed', 'terminal'],
      ['run.ended', 'terminal'],
    ]);
    expect(tail[4]).toMatchObject({ outcome: 'unknown' });
    const toolResult = JSON.stringify(model.requests[0]?.prompt);
    expect(toolResult).toContain('unknown');
  });

  it('turns a request interrupted mid-stream into a recorded new attempt of the same step', async () => {
    const store = memoryStore();
    // Two runtimes on one log (a restart): ids must not repeat across them.
    const generateId = sequentialIds();
    const first = testRuntime(store, {
      generateId,
      model: scriptedModel([{ text: ['half an '], stall: true }]),
    });
    const turn = await first.send({ sessionId: 's1', text: 'hello' });
    await until(turn, (event) => event.type === 'text.delta');

    const second = testRuntime(store, {
      generateId,
      model: scriptedModel([{ text: 'A whole answer.' }]),
    });
    const [report] = await second.recover();
    expect(report).toMatchObject({
      interruptedIn: 'requesting.streaming',
      indeterminate: [],
      status: 'resumed',
    });
    expect(await report?.turn.done).toMatchObject({ status: 'completed', text: 'A whole answer.' });
    const starts = (await second.facts('s1')).filter(
      (fact): fact is Extract<Fact, { type: 'step.started' }> => fact.type === 'step.started',
    );
    expect(starts.map((fact) => [fact.stepId, fact.attempt])).toEqual([
      [starts[0]?.stepId, 1],
      [starts[0]?.stepId, 2],
    ]);
  });

  it('keeps a run parked for permission parked, with the same pending decision', async () => {
    const store = memoryStore();
    // Two runtimes on one log (a restart): ids must not repeat across them.
    const generateId = sequentialIds();
    const { tool, executions } = addTool('ask');
    const first = testRuntime(store, {
      generateId,
      model: scriptedModel([{ toolCalls: [{ name: 'add', input: { a: 1, b: 2 } }] }]),
      tools: { add: tool },
    });
    const turn = await first.send({ sessionId: 's1', text: 'add' });
    await until(turn, isFactOf('tool.permission.requested'));
    const pendingBefore = await first.pending('s1');

    const second = testRuntime(store, {
      generateId,
      model: scriptedModel([{ text: 'Three.' }]),
      tools: { add: tool },
    });
    const [report] = await second.recover();
    expect(report).toMatchObject({ interruptedIn: 'awaitingPermission', status: 'parked' });
    expect(await second.pending('s1')).toEqual(pendingBefore);
    await second.decide({ sessionId: 's1', callId: 'call_1', decision: 'allow' });
    expect(await report?.turn.done).toMatchObject({ status: 'completed', text: 'Three.' });
    expect(executions).toEqual([{ a: 1, b: 2 }]);
  });
});
