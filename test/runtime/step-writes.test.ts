import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { scriptedModel } from '../../adapters/scripted-model.ts';
import { conversationRuntime, runTurnlog } from '../../bench/turnlog-side.ts';
import type { Fact } from '../../events/facts.ts';
import type { EventStore } from '../../store/event-store.ts';
import { memoryStore } from '../../store/memory/memory-store.ts';
import { defineTool } from '../../tools/define-tool.ts';
import { testRuntime } from './runtime-helpers.ts';

/** A store that records the fact types of each append, in order. */
function countingStore(): { store: EventStore; appends: string[][] } {
  const inner = memoryStore();
  const appends: string[][] = [];
  const store = new Proxy(inner, {
    get(target, key) {
      const value = Reflect.get(target, key, target);
      if (key === 'append') {
        return (...args: Parameters<EventStore['append']>) => {
          appends.push(args[1].map((fact) => fact.type));
          return target.append(...args);
        };
      }
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { store, appends };
}

describe('durable writes per step (architecture/turn-machine.md, "Durable points")', () => {
  it('a tool step is three writes: the request, the response with its decisions and starts, the result', async () => {
    const { store, appends } = countingStore();
    const steps = 20;
    const runtime = conversationRuntime({ store, steps });
    await runTurnlog({ runtime, sessionId: 'writes', steps });
    const facts: Fact[] = await store.read('writes');
    await runtime.close();
    expect(facts).toHaveLength(99);
    // run.started; 19 tool steps of 3 writes; the last step's request and its response with run.ended.
    expect(appends).toHaveLength(1 + 19 * 3 + 2);
    expect(appends.slice(1, 4)).toEqual([
      ['step.started'],
      ['step.completed', 'tool.permission.decided', 'tool.started'],
      ['tool.settled'],
    ]);
    expect(appends.at(-1)).toEqual(['step.completed', 'run.ended']);
  });
});

/** A runtime whose first step calls `slow` three times (and `asked` when `ask`), then ends. */
function threeCalls(store: EventStore, ask: boolean) {
  let running = 0;
  const peaks: number[] = [];
  const executed: string[] = [];
  const slow = defineTool({
    description: 'Waits a little.',
    inputSchema: z.object({ n: z.number() }),
    permission: 'allow',
    execute: async ({ n }) => {
      executed.push(`c${n}`);
      running += 1;
      peaks.push(running);
      await new Promise((resolve) => setTimeout(resolve, 20));
      running -= 1;
      return n;
    },
  });
  const asked = defineTool({
    description: 'Asks first.',
    inputSchema: z.object({}),
    permission: 'ask',
    execute: () => 'asked',
  });
  const calls = [1, 2, 3].map((n) => ({ id: `c${n}`, name: 'slow', input: { n } }));
  const runtime = testRuntime(store, {
    model: scriptedModel([
      { toolCalls: ask ? [...calls, { id: 'c4', name: 'asked', input: {} }] : calls },
      { text: 'done' },
    ]),
    tools: { slow, asked },
    limits: { toolConcurrency: 2 },
  });
  return { runtime, peaks, executed };
}

describe('the starts in the response write', () => {
  it('start the calls that get a slot at once; a call waiting for one starts in its own write', async () => {
    const { store, appends } = countingStore();
    const { runtime, peaks, executed } = threeCalls(store, false);
    const turn = await runtime.send({ sessionId: 's', text: 'go' });
    expect(await turn.done).toMatchObject({ status: 'completed' });
    const facts = await store.read('s');
    await runtime.close();
    expect(appends[2]).toEqual([
      'step.completed',
      ...Array(3).fill('tool.permission.decided'),
      'tool.started',
      'tool.started',
    ]);
    const started = facts.filter((fact) => fact.type === 'tool.started');
    expect(started.map((fact) => fact.callId)).toEqual(['c1', 'c2', 'c3']);
    // c3 took the first slot released, in a write of its own after a result.
    expect(appends.slice(3, 5).flat()).toContain('tool.started');
    expect(executed.sort()).toEqual(['c1', 'c2', 'c3']);
    expect(Math.max(...peaks)).toBe(2);
  });

  it('start nothing when a call of the step asks a person', async () => {
    const { store, appends } = countingStore();
    const { runtime, executed } = threeCalls(store, true);
    const turn = await runtime.send({ sessionId: 's', text: 'go' });
    for await (const event of turn.events) if (event.type === 'tool.permission.requested') break;
    expect(appends[2]).toEqual([
      'step.completed',
      ...Array(3).fill('tool.permission.decided'),
      'tool.permission.requested',
    ]);
    expect(executed).toEqual([]);
    await runtime.decide({ sessionId: 's', callId: 'c4', decision: 'deny' });
    expect(await turn.done).toMatchObject({ status: 'completed' });
    expect(executed.sort()).toEqual(['c1', 'c2', 'c3']);
    await runtime.close();
  });
});
