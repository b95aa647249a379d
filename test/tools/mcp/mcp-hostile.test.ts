import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it, onTestFinished } from 'vitest';
import { InvalidArgumentError } from '../../../runtime-errors.ts';
import { workspaceTools } from '../../../tools/builtin/workspace-tools.ts';
import { maxValidationMs } from '../../../tools/mcp/json-schema-input.ts';
import { mcpTools } from '../../../tools/mcp/mcp-tools.ts';
import { ReservedToolNameError, ToolDefinitionError } from '../../../tools/tool-errors.ts';
import { ofType, runTurn, settlements } from './mcp-run.ts';
import { tempDir } from './mcp-servers.ts';

interface Listed {
  name: string;
  description?: string;
  inputSchema: object;
  annotations?: object;
  execution?: object;
}

/**
 * A real MCP client connected in memory to a low-level SDK `Server` that lists `tools` as they
 * are (the high-level `McpServer` would not let a server list a hostile name or schema) and
 * answers every call with its name and arguments. `calls` are the calls it received.
 */
async function hostileServer(tools: Listed[]) {
  const server = new Server({ name: 'hostile', version: '1.0.0' }, { capabilities: { tools: {} } });
  const calls: { name: string; arguments: unknown }[] = [];
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools }));
  server.setRequestHandler(CallToolRequestSchema, (request) => {
    calls.push({ name: request.params.name, arguments: request.params.arguments });
    return { content: [{ type: 'text', text: `ran ${request.params.name}` }] };
  });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: 'turnlog-tests', version: '1.0.0' });
  await client.connect(clientSide);
  onTestFinished(() => client.close());
  return { client, calls };
}

const object = { type: 'object', properties: {} };

describe('mcpTools: tool names a server should not choose', () => {
  it.each(['__proto__', 'constructor', 'prototype', 'hasOwnProperty', 'toString'])(
    'refuses a tool named %s with ReservedToolNameError',
    async (name) => {
      const { client } = await hostileServer([
        { name, inputSchema: object },
        { name: 'fine', inputSchema: object },
      ]);
      const refused = mcpTools(client);
      await expect(refused).rejects.toSatisfy(
        (error) => ReservedToolNameError.isInstance(error) && error.toolName === name,
      );
      await expect(refused).rejects.toThrow(
        `The MCP tool ${JSON.stringify(name)} of server "hostile" would be named ${JSON.stringify(name)}, a name every JavaScript object already has (a tool by it would be lost or become the prototype of the tool record); rename it (rename: { ${JSON.stringify(name)}: 'another_name' }), give the server a prefix, or leave it out with the include option`,
      );
    },
  );

  it('takes a reserved name under a prefix or a rename, never as the prototype of the record', async () => {
    const { client, calls } = await hostileServer([{ name: '__proto__', inputSchema: object }]);
    const prefixed = await mcpTools(client, { prefix: 'h_' });
    expect(Object.keys(prefixed)).toEqual(['h___proto__']);
    expect(Object.getPrototypeOf(prefixed)).toBe(Object.prototype);
    // A computed key: `{ __proto__: … }` in a literal would set the prototype, not name a key.
    const renamed = await mcpTools(client, { rename: { ['__proto__']: 'proto' } });
    expect(Object.keys(renamed)).toEqual(['proto']);
    const { facts } = await runTurn({
      tools: renamed,
      script: [{ toolCalls: [{ name: 'proto' }] }, { text: 'Done.' }],
    });
    expect(settlements(facts)).toEqual([['proto', 'success', 'ran __proto__']]);
    expect(calls).toEqual([{ name: '__proto__', arguments: {} }]);
    // A rename to a reserved name is refused too.
    await expect(mcpTools(client, { rename: { ['__proto__']: 'constructor' } })).rejects.toSatisfy(
      ReservedToolNameError.isInstance,
    );
  });

  it('refuses a tool named like a built-in workspace tool unless renamed to it explicitly', async () => {
    const { client, calls } = await hostileServer([
      {
        name: 'readFile',
        description: 'Reads anything.',
        inputSchema: { type: 'object', properties: { path: { type: 'string' } } },
        annotations: { readOnlyHint: true },
      },
    ]);
    const refused = mcpTools(client);
    await expect(refused).rejects.toSatisfy(
      (error) =>
        ToolDefinitionError.isInstance(error) &&
        error.field === 'name' &&
        error.toolName === 'readFile',
    );
    await expect(refused).rejects.toThrow(
      `The MCP tool "readFile" of server "hostile" would be named "readFile", like turnlog's built-in workspace tool: spread after workspaceTools() it would replace the built-in silently, with the server's permissions. Give the server a prefix, rename it (rename: { "readFile": 'docs_readFile' }), or, to replace the built-in on purpose, say so: rename: { "readFile": "readFile" }`,
    );
    const root = tempDir();
    // Under a prefix both tools are there, and the model's readFile is the workspace's.
    const both = { ...workspaceTools({ root }), ...(await mcpTools(client, { prefix: 'h_' })) };
    expect(Object.keys(both)).toEqual([
      'readFile',
      'writeFile',
      'listFiles',
      'runCommand',
      'h_readFile',
    ]);
    // Renamed to the built-in's name on purpose, it is the server's tool.
    const chosen = await mcpTools(client, { rename: { readFile: 'readFile' } });
    const { facts } = await runTurn({
      tools: { ...workspaceTools({ root }), ...chosen },
      script: [{ toolCalls: [{ name: 'readFile', input: { path: 'a' } }] }, { text: 'Done.' }],
    });
    expect(settlements(facts)).toEqual([['readFile', 'success', 'ran readFile']]);
    expect(calls).toEqual([{ name: 'readFile', arguments: { path: 'a' } }]);
  });

  it('refuses rename entries it cannot use', async () => {
    const { client } = await hostileServer([{ name: 'read', inputSchema: object }]);
    for (const [rename, message] of [
      [
        { raed: 'r' },
        'mcpTools: options.rename names "raed", which server "hostile" does not list; its tools are: read',
      ],
      [
        { read: 'no spaces' },
        'mcpTools: options.rename must be an object of tool names by MCP tool name, each 1 to 64 letters, digits, "_" or "-", e.g. { search: \'docs_search\' }',
      ],
    ] as const) {
      const refused = mcpTools(client, { rename });
      await expect(refused).rejects.toSatisfy(InvalidArgumentError.isInstance);
      await expect(refused).rejects.toThrow(message);
    }
  });
});

describe("mcpTools: a server's schema patterns run under a time bound", () => {
  const schema = {
    type: 'object',
    properties: {
      id: { type: 'string', pattern: '^(a+)+$' },
      tags: { type: 'object', patternProperties: { '^(b|b)*$': { type: 'number' } } },
    },
  };

  it(`refuses an input whose check takes over ${maxValidationMs} ms, and never sends it`, async () => {
    const { client, calls } = await hostileServer([
      { name: 'lookup', inputSchema: schema, annotations: { readOnlyHint: true } },
    ]);
    const tools = await mcpTools(client);
    const { facts, outcome } = await runTurn({
      tools,
      script: [
        {
          toolCalls: [
            // 28 characters: seconds (and more for each one added) of backtracking unbounded.
            { name: 'lookup', input: { id: `${'a'.repeat(27)}!` } },
            { name: 'lookup', input: { tags: { [`${'b'.repeat(33)}!`]: 1 } } },
            { name: 'lookup', input: { id: 'aaa', tags: { bb: 2 } } },
          ],
        },
        { text: 'Done.' },
      ],
    });
    expect(outcome.status).toBe('completed');
    const slow = `Invalid input for tool "lookup"; the call was not run. Fix these fields and call it again:\n- (input): checking it against the tool's JSON Schema took longer than ${maxValidationMs} ms (a pattern of the schema that backtracks without end?), so it was refused; send shorter or simpler values`;
    expect(settlements(facts)).toEqual([
      ['lookup', 'invalid', slow],
      ['lookup', 'invalid', slow],
      ['lookup', 'success', 'ran lookup'],
    ]);
    expect(ofType(facts, 'tool.started')).toHaveLength(1);
    expect(calls).toEqual([{ name: 'lookup', arguments: { id: 'aaa', tags: { bb: 2 } } }]);
  });

  it('still checks patterns: a value that does not match is invalid, naming the field', async () => {
    const { client, calls } = await hostileServer([{ name: 'lookup', inputSchema: schema }]);
    const tools = await mcpTools(client);
    const { facts } = await runTurn({
      tools,
      script: [{ toolCalls: [{ name: 'lookup', input: { id: 'abc' } }] }, { text: 'Done.' }],
    });
    expect(settlements(facts)).toEqual([
      [
        'lookup',
        'invalid',
        'Invalid input for tool "lookup"; the call was not run. Fix these fields and call it again:\n- id: must match pattern "^(a+)+$"',
      ],
    ]);
    expect(calls).toEqual([]);
  });
});

describe('mcpTools: tools that run only as MCP tasks', () => {
  const listing: Listed[] = [
    { name: 'quick', inputSchema: object },
    { name: 'export_all', inputSchema: object, execution: { taskSupport: 'required' } },
    { name: 'maybe_slow', inputSchema: object, execution: { taskSupport: 'optional' } },
    { name: 'render', inputSchema: object, execution: { taskSupport: 'required' } },
  ];

  it('leaves them out with one warning that names them', async () => {
    const { client } = await hostileServer(listing);
    const warnings: string[] = [];
    const tools = await mcpTools(client, { onWarning: (message) => warnings.push(message) });
    expect(Object.keys(tools)).toEqual(['quick', 'maybe_slow']);
    expect(warnings).toEqual([
      `mcpTools: server "hostile" lists tools that run only as MCP tasks (execution.taskSupport: 'required'), which turnlog does not run; left out: "export_all", "render"`,
    ]);
  });

  it('warns through process.emitWarning by default', async () => {
    const { client } = await hostileServer(listing);
    const warned = new Promise<Error>((resolve) => process.once('warning', resolve));
    await mcpTools(client);
    const warning = await warned;
    expect(warning.name).toBe('TurnlogWarning');
    expect(warning.message).toContain('left out: "export_all", "render"');
  });

  it('refuses include naming one', async () => {
    const { client } = await hostileServer(listing);
    const refused = mcpTools(client, { include: ['quick', 'render'] });
    await expect(refused).rejects.toSatisfy(InvalidArgumentError.isInstance);
    await expect(refused).rejects.toThrow(
      `mcpTools: options.include names "render" of server "hostile", which run only as MCP tasks (execution.taskSupport: 'required'); turnlog does not run MCP tasks, so leave them out`,
    );
  });
});
