import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { scriptedModel } from '../../adapters/scripted-model.ts';
import type { Fact, FactOf } from '../../events/facts.ts';
import { sequentialIds } from '../../events/ids.ts';
import { hashJson } from '../../events/json.ts';
import { InvalidArgumentError } from '../../runtime-errors.ts';
import { memoryStore } from '../../store/memory/memory-store.ts';
import { defineTool, toModelToolDefinitions } from '../../tools/define-tool.ts';
import type { ToolSet } from '../../tools/tool.ts';
import { ToolDefinitionError } from '../../tools/tool-errors.ts';
import { addTool, isFactOf, testRuntime, until } from './runtime-helpers.ts';

const stepsOf = (facts: Fact[], runId: string) =>
  facts.filter(
    (fact): fact is FactOf<'step.started'> => fact.type === 'step.started' && fact.runId === runId,
  );

const echo = defineTool({
  description: 'Echoes a word.',
  inputSchema: z.object({ word: z.string() }),
  execute: ({ word }) => word,
});

describe('createRuntime({ tools }) as a function read when a run starts', () => {
  it('keeps the set a run started with until it ends, even parked; the next run gets the new set', async () => {
    const { tool: add, executions } = addTool('ask');
    let current: ToolSet = { add };
    let reads = 0;
    const model = scriptedModel([
      { toolCalls: [{ name: 'add', input: { a: 1, b: 2 } }] },
      // The set changed while this run was parked: the run still has only `add`.
      { toolCalls: [{ name: 'echo', input: { word: 'hi' } }] },
      { text: 'done' },
      { toolCalls: [{ name: 'echo', input: { word: 'hi' } }] },
      { text: 'done again' },
    ]);
    const runtime = testRuntime(memoryStore(), {
      model,
      tools: () => {
        reads += 1;
        return current;
      },
    });
    const first = await runtime.send({ sessionId: 's1', text: 'go' });
    await until(first, (event) => event.type === 'tool.permission.requested');
    current = { add, echo };
    const [pending] = await runtime.pending('s1');
    await runtime.decide({
      sessionId: 's1',
      callId: pending?.callId ?? '',
      decision: 'allow',
      inputHash: pending?.inputHash ?? '',
    });
    expect((await first.done).status).toBe('completed');
    const second = await runtime.send({ sessionId: 's1', text: 'again' });
    expect((await second.done).status).toBe('completed');

    const facts = await runtime.facts('s1');
    const [firstSteps, secondSteps] = [stepsOf(facts, first.runId), stepsOf(facts, second.runId)];
    const oldHash = hashJson(toModelToolDefinitions({ add }));
    const newHash = hashJson(toModelToolDefinitions({ add, echo }));
    expect(firstSteps.map((step) => [step.request.tools, step.request.toolsHash])).toEqual([
      [['add'], oldHash],
      [['add'], oldHash],
      [['add'], oldHash],
    ]);
    expect(secondSteps.map((step) => [step.request.tools, step.request.toolsHash])).toEqual([
      [['add', 'echo'], newHash],
      [['add', 'echo'], newHash],
    ]);
    const settled = facts.filter((fact) => fact.type === 'tool.settled');
    expect(settled.map((fact) => [fact.runId, fact.name, fact.outcome])).toEqual([
      [first.runId, 'add', 'success'],
      [first.runId, 'echo', 'invalid'],
      [second.runId, 'echo', 'success'],
    ]);
    expect(executions).toEqual([{ a: 1, b: 2 }]);
    // Once per run: the parked run was rebuilt from the set it was pinned to, not read again.
    expect(reads).toBe(2);
    await runtime.close();
  });

  it('reads the function again for a run recovered by a new runtime (the old set is gone with its process)', async () => {
    const generateId = sequentialIds();
    const { tool: add } = addTool('ask');
    const runtime = testRuntime(memoryStore(), {
      generateId,
      model: scriptedModel([{ toolCalls: [{ name: 'add', input: { a: 1, b: 2 } }] }]),
      tools: () => ({ add }),
    });
    const turn = await runtime.send({ sessionId: 's1', text: 'go' });
    await until(turn, isFactOf('tool.permission.requested'));
    const facts = await runtime.facts('s1');
    await runtime.close();

    const reopened = testRuntime(memoryStore({ facts }), {
      generateId,
      model: scriptedModel([{ text: 'done' }]),
      tools: () => ({ add, echo }),
    });
    const [recovered] = await reopened.recover();
    expect(recovered?.status).toBe('parked');
    const [pending] = await reopened.pending('s1');
    await reopened.decide({
      sessionId: 's1',
      callId: pending?.callId ?? '',
      decision: 'allow',
      inputHash: pending?.inputHash ?? '',
    });
    if (recovered?.status !== 'parked') throw new Error('expected a parked run');
    expect((await recovered.turn.done).status).toBe('completed');
    const steps = stepsOf(await reopened.facts('s1'), turn.runId);
    expect(steps.map((step) => step.request.tools)).toEqual([['add'], ['add', 'echo']]);
    await reopened.close();
  });

  it('records one hash for runs whose function returns a new record around the same tools', async () => {
    const { tool: add } = addTool();
    const runtime = testRuntime(memoryStore(), {
      model: scriptedModel([{ text: 'one' }, { text: 'two' }]),
      tools: () => ({ add, echo }),
    });
    for (const text of ['one', 'two']) {
      await (await runtime.send({ sessionId: 's1', text })).done;
    }
    const hashes = (await runtime.facts('s1')).flatMap((fact) =>
      fact.type === 'step.started' ? [fact.request.toolsHash] : [],
    );
    expect(hashes).toEqual([
      hashJson(toModelToolDefinitions({ add, echo })),
      hashJson(toModelToolDefinitions({ add, echo })),
    ]);
    await runtime.close();
  });

  it('refuses to start a run when the function returns no record or a broken tool, recording nothing', async () => {
    const runtime = testRuntime(memoryStore(), {
      model: scriptedModel([]),
      tools: () => undefined as unknown as ToolSet,
    });
    const refused = runtime.send({ sessionId: 's1', text: 'go' });
    await expect(refused).rejects.toSatisfy(InvalidArgumentError.isInstance);
    await expect(refused).rejects.toThrow(
      'The tools function of createRuntime returned undefined; return a record of tools',
    );
    const broken = testRuntime(memoryStore(), {
      model: scriptedModel([]),
      tools: () => ({ 'bad name': echo }),
    });
    await expect(broken.send({ sessionId: 's1', text: 'go' })).rejects.toSatisfy(
      ToolDefinitionError.isInstance,
    );
    expect(await runtime.facts('s1')).toEqual([]);
    expect(await broken.facts('s1')).toEqual([]);
    await runtime.close();
    await broken.close();
  });
});
