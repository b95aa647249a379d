import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { scriptedModel } from '../../adapters/scripted-model.ts';
import type { FactOf } from '../../events/facts.ts';
import { hashText } from '../../events/json.ts';
import { compareFingerprints, recordedFingerprint } from '../../events/run-fingerprint.ts';
import { runtimeVersion } from '../../runtime.ts';
import { memoryStore } from '../../store/memory/memory-store.ts';
import { defineTool } from '../../tools/define-tool.ts';
import { addTool, isFactOf, testRuntime, until } from './runtime-helpers.ts';

describe('what a run was run with', () => {
  it('is recorded in run.started, and a runtime with another tool set names what a parked run would meet', async () => {
    const store = memoryStore();
    const before = testRuntime(store, {
      model: scriptedModel([{ toolCalls: [{ id: 'call_1', name: 'add', input: { a: 1, b: 2 } }] }]),
      tools: { add: addTool('ask').tool },
      system: 'Add.',
      telemetry: false,
    });
    const turn = await before.send({ sessionId: 's1', text: 'Add 1 and 2.' });
    await until(turn, isFactOf('tool.permission.requested'));
    const started = (await before.facts('s1'))[0] as FactOf<'run.started'>;
    expect(recordedFingerprint(started)).toStrictEqual(before.fingerprint());
    expect(before.fingerprint()).toMatchObject({
      turnlogVersion: runtimeVersion,
      machineVersion: '5',
      model: { provider: 'scripted', modelId: 'scripted-model' },
      tools: [{ name: 'add', inputSchemaHash: expect.stringMatching(/^sha256:/) }],
      systemHash: hashText('Add.'),
    });
    await before.close();

    // The next deploy: `add` takes strings now, and the prompt changed.
    const after = testRuntime(store, {
      model: scriptedModel([]),
      tools: () => ({
        add: defineTool({
          description: 'Adds two numbers.',
          inputSchema: z.object({ a: z.string(), b: z.string() }),
          execute: () => 0,
        }),
      }),
      system: 'Add carefully.',
      telemetry: false,
    });
    expect(
      compareFingerprints(recordedFingerprint(started), after.fingerprint()).map((d) => d.kind),
    ).toStrictEqual(['tool-changed', 'system-changed']);
    await after.close();
  });
});
