// Found by bench/parked-memory.ts: callers that iterate `turn.events` and keep no other
// reference to the handle (a request handler awaiting its turn) hung forever once a GC ran while
// they waited. The runtime holds the handle's event buffer only through a WeakRef; a waiting
// iterator is reachable only from that buffer, so the whole chain was collectable.
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { LanguageModelV4 } from '@ai-sdk/provider';
import { describe, expect, it } from 'vitest';
import { scriptedModel } from '../../adapters/scripted-model.ts';
import type { TurnEvent } from '../../machines/effects/turn-channel.ts';
import { createRuntime } from '../../runtime.ts';
import { memoryStore } from '../../store/memory/memory-store.ts';

v8.setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** A model whose only request waits until `open()` is called. */
function gatedModel() {
  let open!: () => void;
  const gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  const scripted = scriptedModel([{ text: ['Hello', '!'] }]);
  const model: LanguageModelV4 = {
    ...scripted,
    doStream: async (call) => {
      await gate;
      return scripted.doStream(call);
    },
  };
  return { model, open };
}

const macrotask = () => new Promise((resolve) => setTimeout(resolve, 0));

/**
 * Sends a turn and starts reading its events, keeping nothing of the handle but `done`; returns
 * `done` and the event types read so far.
 */
async function sendAndRead(runtime: ReturnType<typeof createRuntime>) {
  const turn = await runtime.send({ sessionId: 's1', text: 'hi' });
  const seen: string[] = [];
  const read = async (events: AsyncIterable<TurnEvent>) => {
    for await (const event of events) seen.push(event.type);
    seen.push('(iteration ended)');
  };
  read(turn.events);
  return { done: turn.done, seen };
}

describe('turn.events after a garbage collection', () => {
  it('still delivers every event to an iterator whose handle nobody else holds', async () => {
    const { model, open } = gatedModel();
    const runtime = createRuntime({ model, store: memoryStore() });
    const { done, seen } = await sendAndRead(runtime);
    await macrotask();
    expect(seen).toEqual(['run.started', 'step.started']);

    // The iterator now waits for the model; only the runtime's WeakRef leads to its buffer.
    for (let round = 0; round < 3; round += 1) {
      gc();
      await macrotask();
    }
    open();
    expect((await done).status).toBe('completed');
    await macrotask();

    expect(seen).toEqual([
      'run.started',
      'step.started',
      'text.delta',
      'text.delta',
      'step.completed',
      'run.ended',
      '(iteration ended)',
    ]);
    await runtime.close();
  });
});
