import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { scriptedModel } from '../../adapters/scripted-model.ts';
import type { Fact, NewFact } from '../../events/facts.ts';
import { NoActiveRunError } from '../../runtime-errors.ts';
import type { EventStore } from '../../store/event-store.ts';
import { memoryStore } from '../../store/memory/memory-store.ts';
import { defineTool } from '../../tools/define-tool.ts';
import { addTool, deferred, isFactOf, testRuntime, until } from './runtime-helpers.ts';

/**
 * A memory store whose next append of a fact matching `match` waits until `release()`: the
 * window between a run's last commit starting and becoming durable (on lowdbStore, the fsync).
 */
function holdingStore(match: (fact: NewFact) => boolean) {
  const inner = memoryStore();
  const held = deferred();
  const gate = deferred();
  let armed = true;
  const store: EventStore = {
    read: (sessionId, options) => inner.read(sessionId, options),
    subscribe: (sessionId, listener) => inner.subscribe(sessionId, listener),
    openRuns: () => inner.openRuns(),
    findings: () => inner.findings(),
    sessions: () => inner.sessions(),
    savePartial: (sessionId, partial) => inner.savePartial(sessionId, partial),
    loadPartial: (sessionId) => inner.loadPartial(sessionId),
    clearPartial: (sessionId) => inner.clearPartial(sessionId),
    close: () => inner.close(),
    async append(sessionId, facts, options) {
      if (armed && facts.some(match)) {
        armed = false;
        held.resolve();
        await gate.promise;
      }
      return inner.append(sessionId, facts, options);
    },
  };
  return { store, held: held.promise, release: gate.resolve };
}

/**
 * Calls `call` while the run's last append is held, lets its commit queue behind that append
 * (every pending microtask runs before `setImmediate`), releases the append, and returns what the
 * call settled with: `'resolved'` or the error.
 */
async function raceTheEnd(call: () => Promise<unknown>, release: () => void): Promise<unknown> {
  const settled = call().then(
    () => 'resolved',
    (error: unknown) => error,
  );
  await new Promise<void>((resolve) => setImmediate(resolve));
  release();
  return settled;
}

const finalStep = (fact: NewFact) => fact.type === 'step.completed' && fact.toolCalls.length === 0;

describe('a steer, decision or stop that loses the race with the run’s end', () => {
  it.each([
    ['steer', { text: 'and in French?' }],
    ['stop', { reason: 'enough' }],
  ] as const)(
    '%s() queued behind the final step.completed throws NoActiveRunError instead of resolving',
    async (operation, argument) => {
      const { store, held, release } = holdingStore(finalStep);
      const runtime = testRuntime(store, { model: scriptedModel([{ text: 'Bonjour.' }]) });
      const turn = await runtime.send({ sessionId: 's1', text: 'hello' });
      await held;
      const call = () =>
        operation === 'steer'
          ? runtime.steer({ sessionId: 's1', ...argument } as { sessionId: string; text: string })
          : runtime.stop({ sessionId: 's1', ...argument });
      const error = await raceTheEnd(call, release);
      expect(NoActiveRunError.isInstance(error)).toBe(true);
      expect((error as Error).message).toBe(
        `runtime.${operation}(): run ${turn.runId} of session s1 ended (or is stopping) before this ${operation} could be recorded; nothing was recorded. Start a new run with runtime.send().`,
      );
      expect(await turn.done).toMatchObject({ status: 'completed', reason: 'end_turn' });
      const types = (await runtime.facts('s1')).map((fact: Fact) => fact.type);
      expect(types).toEqual(['run.started', 'step.started', 'step.completed', 'run.ended']);
      await runtime.close();
    },
  );

  it('decide() queued behind the end of a stopped run throws NoActiveRunError instead of resolving', async () => {
    // The stop settles the asked call `cancelled`; that last settlement ends the run.
    const { store, held, release } = holdingStore(
      (fact) => fact.type === 'tool.settled' && fact.outcome === 'cancelled',
    );
    const { tool, executions } = addTool('ask');
    const runtime = testRuntime(store, {
      model: scriptedModel([{ toolCalls: [{ name: 'add', input: { a: 1, b: 2 } }] }]),
      tools: { add: tool },
    });
    const turn = await runtime.send({ sessionId: 's1', text: 'add' });
    await until(turn, isFactOf('tool.permission.requested'));
    const [pending] = await runtime.pending('s1');
    await runtime.stop({ sessionId: 's1' });
    await held;
    const callId = pending?.callId ?? '';
    const error = await raceTheEnd(
      () => runtime.decide({ sessionId: 's1', callId, decision: 'allow' }),
      release,
    );
    expect(NoActiveRunError.isInstance(error)).toBe(true);
    expect((error as Error).message).toBe(
      `runtime.decide(): run ${turn.runId} of session s1 ended (or is stopping) before this decide could be recorded; nothing was recorded. Start a new run with runtime.send().`,
    );
    expect(await turn.done).toMatchObject({ status: 'aborted', reason: 'stop_requested' });
    expect(executions).toEqual([]);
    const decisions = (await runtime.facts('s1')).filter(isFactOf('tool.permission.decided'));
    expect(decisions).toEqual([]);
    await runtime.close();
  });

  it('a second stop() while the run is stopping resolves: the first stop is in effect', async () => {
    const entered = deferred();
    const finish = deferred();
    const slow = defineTool({
      description: 'Finishes only when the test says so, stop or not.',
      inputSchema: z.object({}),
      execute: async () => {
        entered.resolve();
        await finish.promise;
        return 'done';
      },
    });
    const runtime = testRuntime(memoryStore(), {
      model: scriptedModel([{ toolCalls: [{ name: 'slow' }] }]),
      tools: { slow },
    });
    const turn = await runtime.send({ sessionId: 's1', text: 'go' });
    await entered.promise;
    await runtime.stop({ sessionId: 's1', reason: 'first' });
    await runtime.stop({ sessionId: 's1', reason: 'second' });
    finish.resolve();
    expect(await turn.done).toMatchObject({ status: 'aborted', reason: 'stop_requested' });
    const stops = (await runtime.facts('s1')).filter(isFactOf('run.stop.requested'));
    expect(stops).toMatchObject([{ reason: 'first', state: 'settlingTools.stopping' }]);
    await runtime.close();
  });
});
