import { describe, expect, it } from 'vitest';
import type { InspectionEvent } from 'xstate';
import { scriptedModel } from '../../adapters/scripted-model.ts';
import { statePath } from '../../machines/pure/state-path.ts';
import { memoryStore } from '../../store/memory/memory-store.ts';
import { addTool, isFactOf, testRuntime, until } from './runtime-helpers.ts';

describe('createRuntime({ inspect })', () => {
  it('hands the observer @xstate.snapshot events naming each state the run went through', async () => {
    const events: InspectionEvent[] = [];
    const { tool } = addTool('ask');
    const model = scriptedModel([
      { toolCalls: [{ name: 'add', input: { a: 1, b: 2 } }] },
      { text: 'Three.' },
    ]);
    const runtime = testRuntime(memoryStore(), {
      model,
      tools: { add: tool },
      inspect: (event) => events.push(event),
    });
    const turn = await runtime.send({ sessionId: 's1', text: 'add' });
    await until(turn, isFactOf('tool.permission.requested'));
    await runtime.decide({ sessionId: 's1', callId: 'call_1', decision: 'allow' });
    await turn.done;

    const states: string[] = [];
    for (const event of events) {
      // The turn machine's own snapshots (its actors report snapshots too).
      if (event.type !== '@xstate.snapshot' || event.actorRef.sessionId !== event.rootId) continue;
      const snapshot = event.snapshot as { value?: unknown };
      if (snapshot.value === undefined) continue;
      const state = statePath(snapshot.value as string);
      if (states.at(-1) !== state) states.push(state);
    }
    expect(states).toEqual([
      'projecting',
      'requesting.streaming',
      'settlingTools.deciding',
      'awaitingPermission',
      // The parked run is dropped and rebuilt from the log when the decision arrives.
      'settlingTools.running',
      'projecting',
      'requesting.streaming',
      'terminal',
    ]);
    await runtime.close();
  });
});
