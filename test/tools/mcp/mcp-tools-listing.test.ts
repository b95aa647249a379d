import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it, onTestFinished } from 'vitest';
import { InvalidArgumentError } from '../../../runtime-errors.ts';
import { McpToolsError } from '../../../tools/mcp/mcp-client.ts';
import { mcpTools } from '../../../tools/mcp/mcp-tools.ts';
import { ToolDefinitionError } from '../../../tools/tool-errors.ts';

type Listed = { name: string; description?: string; title?: string; inputSchema: object };

/**
 * A real MCP client connected in memory to a low-level SDK `Server` that lists `pages` of tools
 * (page n answers the cursor `String(n)`; `loop` makes the last page point back to page 1).
 */
async function serverListing(pages: Listed[][], { loop = false } = {}) {
  const server = new Server({ name: 'listing', version: '1.0.0' }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, (request) => {
    const index = Number(request.params?.cursor ?? 0);
    const next = index + 1 < pages.length ? String(index + 1) : loop ? '1' : undefined;
    return { tools: pages[index] ?? [], ...(next === undefined ? {} : { nextCursor: next }) };
  });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: 'turnlog-tests', version: '1.0.0' });
  await client.connect(clientSide);
  onTestFinished(() => client.close());
  return client;
}

const object = { type: 'object', properties: {} };

describe('mcpTools: listing and options', () => {
  it('follows tools/list pages, and describes a tool without a description by its title or its name', async () => {
    const client = await serverListing([
      [{ name: 'a', description: 'Does a.', inputSchema: object }],
      [
        { name: 'b', title: 'The b tool', inputSchema: object },
        { name: 'c', description: ' ', inputSchema: object },
      ],
    ]);
    const tools = await mcpTools(client);
    expect(Object.entries(tools).map(([name, tool]) => [name, tool.description])).toEqual([
      ['a', 'Does a.'],
      ['b', 'The b tool'],
      ['c', 'The tool c of the MCP server "listing".'],
    ]);
  });

  it('refuses a listing whose cursor comes back (it would never end)', async () => {
    const client = await serverListing(
      [[{ name: 'a', inputSchema: object }], [{ name: 'b', inputSchema: object }]],
      { loop: true },
    );
    const listing = mcpTools(client);
    await expect(listing).rejects.toSatisfy(McpToolsError.isInstance);
    await expect(listing).rejects.toThrow(
      'mcpTools: server "listing" sent the tools/list cursor "1" twice, so its listing never ends; fix the server, or report it to its authors',
    );
  });

  it('refuses two MCP names for one tool name, and a schema it cannot validate, naming the tool', async () => {
    const colliding = await serverListing([
      [
        { name: 'a.b', inputSchema: object },
        { name: 'a_b', inputSchema: object },
      ],
    ]);
    await expect(mcpTools(colliding)).rejects.toThrow(
      'The MCP tools "a.b" and "a_b" of server "listing" both map to the tool name "a_b"',
    );
    // include is how to take one of them.
    expect(Object.keys(await mcpTools(colliding, { include: ['a_b'] }))).toEqual(['a_b']);

    const draft4 = await serverListing([
      [
        {
          name: 'old',
          inputSchema: { type: 'object', $schema: 'http://json-schema.org/draft-04/schema#' },
        },
      ],
    ]);
    const refused = mcpTools(draft4);
    await expect(refused).rejects.toSatisfy(
      (error) => ToolDefinitionError.isInstance(error) && error.field === 'inputSchema',
    );
    await expect(refused).rejects.toThrow(
      'The input schema of MCP tool "old" of server "listing" cannot validate its calls (its $schema "http://json-schema.org/draft-04/schema#" is not a JSON Schema draft turnlog validates (2020-12, 2019-09, draft-07)); leave the tool out with the include option',
    );
  });

  it('refuses options it cannot use, saying what to pass', async () => {
    const client = await serverListing([[{ name: 'read', inputSchema: object }]]);
    const cases: [unknown, object, string][] = [
      [
        {},
        {},
        'mcpTools: client is not an MCP client; pass a connected Client from @modelcontextprotocol/sdk',
      ],
      [
        client,
        { prefix: 'fs.' },
        'mcpTools: options.prefix is "fs."; use up to 32 letters, digits, "_" or "-"',
      ],
      [
        client,
        { timeoutMs: 0 },
        'mcpTools: options.timeoutMs is 0; use a whole number of milliseconds from 1 to 2147483647',
      ],
      [client, { include: 'read' }, 'mcpTools: options.include must be an array of MCP tool names'],
      [
        client,
        { include: ['raed'] },
        'mcpTools: options.include names "raed", which server "listing" does not list; its tools are: read',
      ],
      [
        client,
        { permission: { write: 'ask' } },
        'mcpTools: options.permission names "write", which server "listing" does not list; its tools are: read',
      ],
    ];
    for (const [candidate, options, message] of cases) {
      const refused = mcpTools(candidate as Client, options);
      await expect(refused).rejects.toSatisfy(InvalidArgumentError.isInstance);
      await expect(refused).rejects.toThrow(message);
    }
  });
});
