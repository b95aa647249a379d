import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { aiSdkAdapter } from '../../../adapters/ai-sdk-adapter.ts';
import { scriptedModel } from '../../../adapters/scripted-model.ts';
import type { FactOf } from '../../../events/facts.ts';
import { sequentialIds } from '../../../events/ids.ts';
import { LiveRuns } from '../../../machines/effects/live-runs.ts';
import type { TurnEvent } from '../../../machines/effects/turn-channel.ts';
import { memoryStore } from '../../../store/memory/memory-store.ts';
import { defineTool } from '../../../tools/define-tool.ts';
import { createToolSetSource } from '../../../tools/tool-set-source.ts';
import { loadSampleLog } from '../../events/sample-logs.ts';

// Run 1 of permission.jsonl waits for the person at seq 4.
const parked = loadSampleLog('permission').slice(0, 4);
const asked = parked[3] as FactOf<'tool.permission.requested'>;
const { sessionId, runId } = asked;

/** Live runs on a store holding the parked run, which nobody drives yet. */
function parkedRuns() {
  const runs = new LiveRuns({
    store: memoryStore({ facts: parked }),
    adapter: aiSdkAdapter(scriptedModel([{ text: 'Cleaned.' }])),
    tools: createToolSetSource({
      tools: {
        runCommand: defineTool({
          description: 'runCommand (test stand-in)',
          inputSchema: z.looseObject({}),
          execute: () => 'done',
        }),
      },
      policy: undefined,
    }),
    system: undefined,
    now: () => Date.UTC(2026, 10, 2),
    generateId: sequentialIds(),
    random: () => 0.5,
    inspect: undefined,
    closedError: () => new Error('closed'),
  });
  return {
    runs,
    follow: (signal?: AbortSignal) =>
      runs.withSession(sessionId, () => runs.follow(sessionId, signal)),
    allow: () =>
      runs.withSession(sessionId, async () => {
        const driver = await runs.active(sessionId);
        if (driver === undefined || 'elsewhere' in driver) throw new Error('not driven here');
        await driver.commit({
          type: 'tool.permission.decided',
          callId: asked.callId,
          decision: 'allow',
          inputHash: asked.inputHash,
          by: 'user',
        });
      }),
  };
}

async function all(events: AsyncIterable<TurnEvent> | Iterable<TurnEvent>): Promise<TurnEvent[]> {
  const seen: TurnEvent[] = [];
  for await (const event of events) seen.push(event);
  return seen;
}

describe('LiveRuns.follow with a signal', () => {
  it('keeps one sink of a parked run after 1,000 handles let go with aborted signals', async () => {
    const { runs, follow, allow } = parkedRuns();
    const kept = await follow();
    for (let request = 0; request < 1_000; request += 1) {
      const reason = new Error(`request ${request} left`);
      const handle = await follow(AbortSignal.abort(reason));
      await expect(handle?.done).rejects.toBe(reason);
    }
    expect(runs.handles.sinksOf(runId)?.size).toBe(1);
    await allow();
    expect(await kept?.done).toMatchObject({ status: 'completed', text: 'Cleaned.' });
    expect(runs.handles.size).toBe(0);
  });

  it('lets a handle go when its signal aborts later: its events end, and a decision resolves only the others', async () => {
    const { runs, follow, allow } = parkedRuns();
    const first = await follow();
    const controller = new AbortController();
    const left = await follow(controller.signal);
    const last = await follow();
    expect(runs.handles.sinksOf(runId)?.size).toBe(3);
    const reason = new Error('the page left');
    controller.abort(reason);
    expect(runs.handles.sinksOf(runId)?.size).toBe(2);
    await expect(left?.done).rejects.toBe(reason);
    expect((await all(left?.events ?? [])).map((event) => event.type)).toEqual(
      parked.map((fact) => fact.type),
    );
    await allow();
    expect(await first?.done).toMatchObject({ status: 'completed' });
    expect(await last?.done).toMatchObject({ status: 'completed' });
  });

  it('forgets a run nobody drives here once its last handle is let go', async () => {
    const { runs, follow } = parkedRuns();
    const controller = new AbortController();
    const handle = await follow(controller.signal);
    expect(runs.handles.sinksOf(runId)?.size).toBe(1);
    controller.abort();
    await expect(handle?.done).rejects.toMatchObject({ name: 'AbortError' });
    expect(runs.handles.sinksOf(runId)).toBeUndefined();
    expect(await follow(AbortSignal.abort())).toMatchObject({ runId });
    expect(runs.handles.size).toBe(0);
  });
});
