import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { scriptedModel } from '../../adapters/scripted-model.ts';
import type { EventStore } from '../../store/event-store.ts';
import { lowdbStore } from '../../store/folder/lowdb-store.ts';
import { memoryStore } from '../../store/memory/memory-store.ts';
import { addTool, testRuntime } from '../runtime/runtime-helpers.ts';

/** Lets `ticks` microtasks run. */
async function microtasks(ticks: number) {
  for (let tick = 0; tick < ticks; tick += 1) await Promise.resolve();
}

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const stores: Record<string, () => EventStore> = {
  memoryStore: () => memoryStore(),
  lowdbStore: () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'turnlog-parking-'));
    dirs.push(dir);
    return lowdbStore({ dir });
  },
};

const cases = Object.keys(stores).flatMap((store) =>
  Array.from({ length: 8 }, (_, ticks) => ({ store, ticks })),
);

/**
 * Found by the crash child, which answers an ask from inside its `turn.events` loop as soon as
 * it sees the run park: a decision made while the runtime is dropping the parked run's live
 * actor must be committed and taken, not lost (decide() resolving with nothing appended) and not
 * turned into a broken run (the driver recording one state while its stopped actor stays in
 * another). Answering 0–7 microtasks after the parking fact sweeps that window.
 */
describe('runtime.decide() as the run parks', () => {
  it.each(cases)(
    'commits the decision and the run goes on ($store, answered $ticks microtasks after the parking fact)',
    async ({ store, ticks }) => {
      const { tool, executions } = addTool('ask');
      const runtime = testRuntime((stores[store] as () => EventStore)(), {
        model: scriptedModel([
          { toolCalls: [{ name: 'add', input: { a: 2, b: 3 } }] },
          { text: 'Five.' },
        ]),
        tools: { add: tool },
      });
      const turn = await runtime.send({ sessionId: 's1', text: 'add' });
      for await (const event of turn.events) {
        if (!('state' in event) || event.state !== 'awaitingPermission') continue;
        await microtasks(ticks);
        await runtime.decide({ sessionId: 's1', callId: 'call_1', decision: 'allow' });
        break;
      }
      expect(await runtime.pending('s1')).toEqual([]);
      expect(await turn.done).toMatchObject({ status: 'completed', text: 'Five.' });
      expect(executions).toEqual([{ a: 2, b: 3 }]);
      const decided = (await runtime.facts('s1')).filter(
        (fact) => fact.type === 'tool.permission.decided',
      );
      expect(decided).toMatchObject([{ callId: 'call_1', decision: 'allow', by: 'user' }]);
      await runtime.close();
    },
  );
});
