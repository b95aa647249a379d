import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { scriptedModel } from '../../adapters/scripted-model.ts';
import type { Fact, FactOf } from '../../events/facts.ts';
import { sequentialIds } from '../../events/ids.ts';
import type { RecoveredRun } from '../../runtime.ts';
import { DamagedSessionError } from '../../runtime-errors.ts';
import { memoryStore } from '../../store/memory/memory-store.ts';
import { defineTool } from '../../tools/define-tool.ts';
import { sampleLogs } from '../helpers/sample-logs.ts';
import { addTool, deferred, isFactOf, testRuntime, until } from './runtime-helpers.ts';

/** The handle of a recovered run (failing the test for a damaged one). */
function resumedTurn(report: RecoveredRun | undefined) {
  if (report === undefined || report.status === 'damaged')
    throw new Error(`no resumable run: ${JSON.stringify(report)}`);
  return report.turn;
}

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
    const result = await resumedTurn(report).done;
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
    expect(await resumedTurn(report).done).toMatchObject({
      status: 'completed',
      text: 'A whole answer.',
    });
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
    expect(await resumedTurn(report).done).toMatchObject({ status: 'completed', text: 'Three.' });
    expect(executions).toEqual([{ a: 1, b: 2 }]);
  });
});

describe('runtime.recover() on a damaged log', () => {
  it('reports the damaged run without touching it, and still resumes the others', async () => {
    const logs = sampleLogs();
    const interrupted = logs.find((log) => log.name === 'interrupted-tool')?.facts ?? [];
    const last = interrupted.at(-1) as Fact;
    const { input: _input, inputHash: _inputHash, ...envelope } = last as FactOf<'tool.started'>;
    // A result for a call no step made: damage planRecovery reports.
    const ghost = {
      ...envelope,
      id: 'ghost_1',
      seq: last.seq + 1,
      type: 'tool.settled',
      callId: 'ghost',
      name: 'x',
      outcome: 'success',
      text: 'boo',
      truncated: false,
    } as Fact;
    const parked = logs.find((log) => log.name === 'permission')?.facts ?? [];
    // The permission log's first run, cut while it waits for the person.
    const asked = parked.slice(
      0,
      parked.findIndex((fact) => fact.type === 'tool.permission.requested') + 1,
    );
    const store = memoryStore({ facts: [...interrupted, ghost, ...asked] });
    const runtime = testRuntime(store, { model: scriptedModel([]) });

    const reports = await runtime.recover();
    const damaged = reports.find((report) => report.sessionId === last.sessionId);
    expect(damaged).toMatchObject({ status: 'damaged', runId: last.runId });
    expect(damaged?.status === 'damaged' && damaged.damage.join(' ')).toContain('ghost');
    expect(await runtime.facts(last.sessionId)).toEqual([...interrupted, ghost]);
    expect(reports.find((report) => report.sessionId === asked[0]?.sessionId)).toMatchObject({
      status: 'parked',
    });
    // The damaged run is not resumed by anything that arrives for it either.
    for (const call of [
      () => runtime.steer({ sessionId: last.sessionId, text: 'hello?' }),
      () => runtime.decide({ sessionId: last.sessionId, callId: 'ghost', decision: 'abort' }),
      () => runtime.stop({ sessionId: last.sessionId }),
    ]) {
      const error = await call().catch((caught: unknown) => caught);
      expect(DamagedSessionError.isInstance(error)).toBe(true);
      expect(error).toMatchObject({
        runId: last.runId,
        damage: [expect.stringContaining('ghost')],
      });
    }
    expect(await runtime.facts(last.sessionId)).toEqual([...interrupted, ghost]);
    await runtime.close();
  });
});

describe('a request before recover() on an interrupted run (one process)', () => {
  it.each(['stop', 'steer'] as const)(
    'runtime.%s() resumes it with the recovery sequence: the started call is indeterminate, never run again',
    async (method) => {
      const interrupted = sampleLogs().find((log) => log.name === 'interrupted-tool')?.facts ?? [];
      const { sessionId, runId } = interrupted[0] as Fact;
      const posts: unknown[] = [];
      const httpPost = defineTool({
        description: 'Posts JSON.',
        inputSchema: z.object({ url: z.string(), body: z.unknown() }),
        execute: (input) => {
          posts.push(input);
          return 'ok';
        },
      });
      const store = memoryStore({ facts: interrupted });
      const runtime = testRuntime(store, {
        model: scriptedModel([{ text: 'Posted once; the first post may or may not have gone.' }]),
        tools: { httpPost },
      });
      if (method === 'stop') await runtime.stop({ sessionId });
      else await runtime.steer({ sessionId, text: 'and say when done' });
      const after = (await runtime.facts(sessionId)).slice(interrupted.length);
      const types = after.map((fact) => fact.type);
      // The recovery sequence first, as recover() would: the started call settles indeterminate.
      expect(types.slice(0, 2)).toEqual(['tool.indeterminate', 'run.recovered']);
      expect(after[0]).toMatchObject({ callId: 'toolu_01CHIKE6JFWYIkTUg274xhCE', runId });
      if (method === 'stop') {
        // Stopped: both calls settle without running and the run ends (it hung before).
        expect(types.slice(2)).toEqual([
          'run.stop.requested',
          'tool.settled',
          'tool.settled',
          'run.ended',
        ]);
        expect(after.at(-1)).toMatchObject({ status: 'aborted', reason: 'stop_requested' });
      } else {
        // Steered: the run waits for a person to say what became of the indeterminate call.
        expect(types.slice(2)).toEqual(['steering.received']);
        expect(await runtime.pending(sessionId)).toMatchObject([
          { callId: 'toolu_01CHIKE6JFWYIkTUg274xhCE', kind: 'indeterminate' },
        ]);
      }
      // The call that was started when the process died never runs again.
      expect(posts).toEqual([]);
      await runtime.close();
    },
  );
});
