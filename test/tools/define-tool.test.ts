import { describe, expect, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import { z as z3 } from 'zod/v3';
import { scriptedModel } from '../../adapters/scripted-model.ts';
import { createRuntime } from '../../runtime.ts';
import { InvalidArgumentError } from '../../runtime-errors.ts';
import { defineTool, reservedToolNames, toModelToolDefinitions } from '../../tools/define-tool.ts';
import type { StandardSchemaV1, Tool } from '../../tools/tool.ts';
import {
  ReservedToolNameError,
  ToolDefinitionError,
  ToolSchemaConversionError,
} from '../../tools/tool-errors.ts';

const echo = defineTool({
  description: 'Echo a message',
  inputSchema: z.object({ message: z.string(), times: z.number().int().default(1) }),
  execute: async ({ message, times }) => message.repeat(times),
});

describe('defineTool', () => {
  it('fills in the defaults: allow, 120 s, no secrets', () => {
    expect(echo.permission).toBe('allow');
    expect(echo.timeoutMs).toBe(120_000);
    expect(echo.secrets({ message: 'x', times: 1 })).toEqual([]);
    expect(echo.description).toBe('Echo a message');
  });

  it('keeps the given permission, timeout and secrets', () => {
    const permission = (input: { key: string }): 'allow' | 'deny' =>
      input.key === '' ? 'deny' : 'allow';
    const tool = defineTool({
      description: 'Uses a key',
      inputSchema: z.object({ key: z.string() }),
      permission,
      timeoutMs: 5_000,
      secrets: ({ key }) => [key],
      execute: () => 'ok',
    });
    expect(tool.permission).toBe(permission);
    expect(tool.timeoutMs).toBe(5_000);
    expect(tool.secrets({ key: 'k-123' })).toEqual(['k-123']);
  });

  it("types execute's input as the schema's output and the tool's output as execute's result", () => {
    const tool = defineTool({
      description: 'Typed',
      inputSchema: z.object({
        path: z.string().default('README.md'),
        size: z.string().transform((value) => value.length),
        count: z.preprocess((value) => Number(value), z.number()),
      }),
      permission: (input) => {
        expectTypeOf(input).toEqualTypeOf<{ path: string; size: number; count: number }>();
        return 'allow';
      },
      execute: async (input) => {
        expectTypeOf(input).toEqualTypeOf<{ path: string; size: number; count: number }>();
        return { bytes: input.size };
      },
    });
    expectTypeOf(tool).toEqualTypeOf<
      Tool<{ path: string; size: number; count: number }, { bytes: number }>
    >();
  });

  it('accepts any Standard Schema, not only zod', async () => {
    const schema: StandardSchemaV1<unknown, { n: number }> = {
      '~standard': {
        version: 1,
        vendor: 'hand-made',
        validate: (value) =>
          typeof value === 'object' &&
          value !== null &&
          typeof (value as { n?: unknown }).n === 'number'
            ? { value: { n: (value as { n: number }).n } }
            : { issues: [{ message: 'expected { n: number }', path: ['n'] }] },
      },
    };
    const tool = defineTool({
      description: 'Hand-made',
      inputSchema: schema,
      execute: ({ n }) => n * 2,
    });
    expectTypeOf(tool.execute).parameter(0).toEqualTypeOf<{ n: number }>();
    expect(
      await tool.execute(
        { n: 21 },
        { signal: new AbortController().signal, callId: 'c', sessionId: 's', idempotencyKey: 'k' },
      ),
    ).toBe(42);
  });

  const one = (): number => 1;
  const badDefinitions: Array<[string, Record<string, unknown>]> = [
    ['description', { description: '  ', inputSchema: z.object({}), execute: one }],
    ['description', { inputSchema: z.object({}), execute: one }],
    ['inputSchema', { description: 'd', inputSchema: { type: 'object' }, execute: one }],
    ['inputSchema', { description: 'd', execute: one }],
    ['execute', { description: 'd', inputSchema: z.object({}), execute: 'run' }],
    ['timeoutMs', { description: 'd', inputSchema: z.object({}), execute: one, timeoutMs: 0 }],
    ['timeoutMs', { description: 'd', inputSchema: z.object({}), execute: one, timeoutMs: 1.5 }],
    [
      'timeoutMs',
      { description: 'd', inputSchema: z.object({}), execute: one, timeoutMs: 2 ** 31 },
    ],
    [
      'permission',
      { description: 'd', inputSchema: z.object({}), execute: one, permission: 'maybe' },
    ],
    ['secrets', { description: 'd', inputSchema: z.object({}), execute: one, secrets: ['x'] }],
  ];
  it.each(badDefinitions)('refuses a definition with a bad %s', (field, definition) => {
    let caught: unknown;
    try {
      defineTool(definition as never);
    } catch (error) {
      caught = error;
    }
    expect(ToolDefinitionError.isInstance(caught)).toBe(true);
    expect((caught as ToolDefinitionError).field).toBe(field);
    expect((caught as ToolDefinitionError).name).toBe('ToolDefinitionError');
  });

  it('says what to do in the error message', () => {
    expect(() =>
      defineTool({ description: 'd', inputSchema: z.object({}), execute: () => 1, timeoutMs: -5 }),
    ).toThrow(
      'defineTool: the tool has timeoutMs -5; use a whole number of milliseconds from 1 to 2147483647',
    );
  });
});

describe('toModelToolDefinitions', () => {
  it("describes the schema's input side: defaults optional, transforms and preprocess by their input", () => {
    const tool = defineTool({
      description: 'Read part of a file',
      inputSchema: z.object({
        path: z.string().describe('Path inside the workspace'),
        limit: z.number().int().default(100),
        name: z.string().transform((value) => value.toUpperCase()),
      }),
      execute: () => 'ok',
    });
    expect(toModelToolDefinitions({ read: tool })).toEqual([
      {
        name: 'read',
        description: 'Read part of a file',
        inputSchema: {
          $schema: 'http://json-schema.org/draft-07/schema#',
          type: 'object',
          properties: {
            path: { type: 'string', description: 'Path inside the workspace' },
            limit: {
              type: 'integer',
              default: 100,
              minimum: -9007199254740991,
              maximum: 9007199254740991,
            },
            name: { type: 'string' },
          },
          required: ['path', 'name'],
        },
      },
    ]);
  });

  it('keeps the order of the tool set', () => {
    const names = toModelToolDefinitions({ b: echo, a: echo, c_1: echo }).map((tool) => tool.name);
    expect(names).toEqual(['b', 'a', 'c_1']);
  });

  it('refuses a tool name providers do not accept, naming it', () => {
    expect(() => toModelToolDefinitions({ 'read file': echo })).toThrow(
      'Tool name "read file" is not accepted by providers; use 1 to 64 letters, digits, "_" or "-"',
    );
    expect(() => toModelToolDefinitions({ ['x'.repeat(65)]: echo })).toThrow(ToolDefinitionError);
    expect(() => toModelToolDefinitions({ '': echo })).toThrow(ToolDefinitionError);
  });

  it('refuses a schema that cannot be expressed as JSON Schema, naming the tool', () => {
    const dated = defineTool({
      description: 'Dated',
      inputSchema: z.object({ when: z.date() }),
      execute: () => 'ok',
    });
    let caught: unknown;
    try {
      toModelToolDefinitions({ echo, dated });
    } catch (error) {
      caught = error;
    }
    expect(ToolSchemaConversionError.isInstance(caught)).toBe(true);
    expect((caught as ToolSchemaConversionError).toolName).toBe('dated');
    expect((caught as Error).message).toContain(
      'The input schema of tool "dated" cannot be converted to JSON Schema (Date cannot be represented in JSON Schema)',
    );
  });

  it('refuses a Standard Schema without JSON Schema support, naming the tool', () => {
    const tool = defineTool({
      description: 'Opaque',
      inputSchema: {
        '~standard': { version: 1, vendor: 'opaque', validate: (value: unknown) => ({ value }) },
      },
      execute: () => 'ok',
    });
    expect(() => toModelToolDefinitions({ opaque: tool })).toThrow(
      'The input schema of tool "opaque" cannot be converted to JSON Schema (its schema library ("opaque") does not implement Standard JSON Schema)',
    );
  });

  it('refuses a zod 3 schema at defineTool, saying to use zod 4', () => {
    const define = () =>
      defineTool({
        description: 'Old',
        inputSchema: z3.object({ city: z3.string() }),
        execute: () => 'ok',
      });
    expect(define).toThrow(ToolDefinitionError);
    expect(define).toThrow(
      "defineTool: the tool has a zod 3 schema (zod 3, or zod 4's \"zod/v3\"), which turnlog cannot turn into the JSON Schema the model needs; use zod 4: import { z } from 'zod' with zod ^4.1.8",
    );
  });

  it('refuses a schema whose input is not an object', () => {
    const tool = defineTool({ description: 'Text', inputSchema: z.string(), execute: () => 'ok' });
    expect(() => toModelToolDefinitions({ text: tool })).toThrow(
      'The input schema of tool "text" describes "string", but tool input must be an object',
    );
  });

  it('refuses something that is not a tool, naming it', () => {
    expect(() => toModelToolDefinitions({ broken: { description: 'x' } as never })).toThrow(
      'Tool "broken" has an inputSchema that is not a Standard Schema; pass a zod schema',
    );
  });
});

describe('reserved tool names', () => {
  it.each([
    ...['__proto__', 'constructor', 'prototype', 'hasOwnProperty', 'valueOf', '__defineGetter__'],
  ])('refuses %s as a tool name of createRuntime with ReservedToolNameError', (name) => {
    // A computed key: an own property named like that, as a tool set built in code has it.
    const tools = { [name]: echo, other: echo };
    const refused = () => createRuntime({ model: scriptedModel([]), tools });
    expect(refused).toThrow(
      `Tool name ${JSON.stringify(name)} is reserved: every JavaScript object already has a ${JSON.stringify(name)}, so a tool by that name would be lost or become the prototype of its tool record; give the tool another name`,
    );
    try {
      refused();
    } catch (error) {
      expect(ReservedToolNameError.isInstance(error)).toBe(true);
      expect((error as ReservedToolNameError).toolName).toBe(name);
    }
    expect(reservedToolNames.has(name)).toBe(true);
  });

  it('refuses a tool set function returning a record whose prototype is a tool', async () => {
    // `__proto__: echo` in a literal sets the prototype: the tool would silently be missing.
    const runtime = createRuntime({ model: scriptedModel([]), tools: () => ({ __proto__: echo }) });
    const sending = runtime.send({ sessionId: 's', text: 'hi' });
    await expect(sending).rejects.toSatisfy(InvalidArgumentError.isInstance);
    await expect(sending).rejects.toThrow(
      'The tools are not a plain object: their prototype is another object (a key written `__proto__: …` in an object literal sets the prototype instead of naming a tool); pass { name: tool, … } with names other than __proto__',
    );
    await runtime.close();
  });
});
