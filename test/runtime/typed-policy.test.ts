import { describe, expect, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import { scriptedModel } from '../../adapters/scripted-model.ts';
import type { JsonValue } from '../../events/json.ts';
import type { TurnResult } from '../../machines/effects/turn-channel.ts';
import type { Reason } from '../../machines/pure/turn-context.ts';
import { createRuntime } from '../../runtime.ts';
import { memoryStore } from '../../store/memory/memory-store.ts';
import { defineTool } from '../../tools/define-tool.ts';
import type { PermissionPolicy } from '../../tools/tool.ts';

describe('the permission policy, typed by the runtime tools', () => {
  it("types each request's input as its tool's validated input, and applies the verdict", async () => {
    const ran: string[] = [];
    const shell = defineTool({
      description: 'Runs a command.',
      inputSchema: z.object({ command: z.string(), args: z.array(z.string()).default([]) }),
      execute: ({ command }) => {
        ran.push(command);
        return 'done';
      },
    });
    const add = defineTool({
      description: 'Adds.',
      inputSchema: z.object({ a: z.number(), b: z.number() }),
      execute: ({ a, b }) => a + b,
    });
    const model = scriptedModel([
      {
        toolCalls: [
          { name: 'shell', input: { command: 'rm' } },
          { name: 'shell', input: { command: 'ls' } },
          { name: 'add', input: { a: 1, b: 2 } },
        ],
      },
      { text: 'Done.' },
    ]);
    const runtime = createRuntime({
      model,
      store: memoryStore(),
      tools: { shell, add },
      policy: ({ name, input }) => {
        if (name === 'shell') {
          expectTypeOf(input).toEqualTypeOf<{ command: string; args: string[] }>();
          return input.command === 'rm'
            ? { verdict: 'deny', reason: 'rm is never allowed' }
            : undefined;
        }
        expectTypeOf(name).toEqualTypeOf<'add'>();
        expectTypeOf(input).toEqualTypeOf<{ a: number; b: number }>();
        return undefined;
      },
    });
    const turn = await runtime.send({ sessionId: 's1', text: 'clean up' });
    const result = await turn.done;
    expectTypeOf(result.reason).toEqualTypeOf<Reason>();
    expect(result).toMatchObject({ status: 'completed', reason: 'end_turn' });
    expect(ran).toEqual(['ls']);
    const settled = (await runtime.facts('s1')).flatMap((fact) =>
      fact.type === 'tool.settled' ? [[fact.name, fact.outcome]] : [],
    );
    expect(settled).toEqual([
      ['shell', 'denied'],
      ['shell', 'success'],
      ['add', 'success'],
    ]);
    await runtime.close();
  });

  it('keeps an untyped policy (a plain tool set) on JSON input', () => {
    expectTypeOf<Parameters<PermissionPolicy>[0]['input']>().toEqualTypeOf<JsonValue>();
    expectTypeOf<Parameters<PermissionPolicy>[0]['name']>().toEqualTypeOf<string>();
    expectTypeOf<TurnResult['reason']>().toEqualTypeOf<Reason>();
  });
});
