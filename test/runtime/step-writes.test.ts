import { describe, expect, it } from 'vitest';
import { conversationRuntime, runTurnlog } from '../../bench/turnlog-side.ts';
import type { Fact } from '../../events/facts.ts';
import type { EventStore } from '../../store/event-store.ts';
import { memoryStore } from '../../store/memory/memory-store.ts';

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
