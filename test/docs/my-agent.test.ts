import { expect, it } from 'vitest';
import { z } from 'zod';
import { createRuntime, defineTool, memoryStore, scriptedModel } from '../../index.ts';

it('asks before deleting, and deletes exactly once when allowed', async () => {
  const deleted: string[] = [];
  const deleteFile = defineTool({
    description: 'Deletes a file.',
    inputSchema: z.object({ path: z.string() }),
    permission: 'ask',
    execute: ({ path }) => {
      deleted.push(path);
      return `deleted ${path}`;
    },
  });
  const model = scriptedModel([
    { toolCalls: [{ name: 'deleteFile', input: { path: 'old.log' } }] },
    { text: 'Deleted old.log.' },
  ]);
  const runtime = createRuntime({ model, tools: { deleteFile }, store: memoryStore() });

  const turn = await runtime.send({ sessionId: 'test', text: 'Delete old.log' });
  for await (const event of turn.events) if (event.type === 'tool.permission.requested') break;
  expect(deleted).toEqual([]);
  const [pending] = await runtime.pending('test');
  await runtime.decide({ sessionId: 'test', callId: pending?.callId ?? '', decision: 'allow' });

  expect(await turn.done).toMatchObject({ status: 'completed', text: 'Deleted old.log.' });
  expect(deleted).toEqual(['old.log']);
  expect((await runtime.facts('test')).map((fact) => fact.type)).toContain('tool.started');
  expect(model.requests).toHaveLength(2);
});
