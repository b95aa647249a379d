import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it, onTestFinished } from 'vitest';
import { InvalidArgumentError } from '../../../runtime-errors.ts';
import { mcpTools } from '../../../tools/mcp/mcp-tools.ts';

const object = { type: 'object', properties: {} };

/** A server listing one tool per kind of hint. */
async function hintedServer() {
  const server = new Server({ name: 'hinted', version: '1.0.0' }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: [
      { name: 'read', inputSchema: object, annotations: { readOnlyHint: true } },
      {
        name: 'upsert',
        inputSchema: object,
        annotations: { readOnlyHint: false, idempotentHint: true },
      },
      { name: 'send', inputSchema: object, annotations: { readOnlyHint: false } },
      { name: 'plain', inputSchema: object },
    ],
  }));
  server.setRequestHandler(CallToolRequestSchema, () => ({ content: [] }));
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: 'turnlog-tests', version: '1.0.0' });
  await client.connect(clientSide);
  onTestFinished(() => client.close());
  return client;
}

const idempotentOnes = (tools: Record<string, { idempotent?: boolean }>) =>
  Object.entries(tools)
    .filter(([, tool]) => tool.idempotent === true)
    .map(([name]) => name);

describe('mcpTools: which server hints make a tool idempotent (run again after a restart)', () => {
  it('trusts readOnlyHint only, by default', async () => {
    expect(idempotentOnes(await mcpTools(await hintedServer()))).toEqual(['read']);
  });

  it("trusts idempotentHint too with idempotentFrom: 'readOnlyOrIdempotentHint'", async () => {
    const tools = await mcpTools(await hintedServer(), {
      idempotentFrom: 'readOnlyOrIdempotentHint',
    });
    expect(idempotentOnes(tools)).toEqual(['read', 'upsert']);
  });

  it("trusts no hint with idempotentFrom: 'none'", async () => {
    expect(
      idempotentOnes(await mcpTools(await hintedServer(), { idempotentFrom: 'none' })),
    ).toEqual([]);
  });

  it('refuses another idempotentFrom, naming the accepted ones', async () => {
    await expect(
      mcpTools(await hintedServer(), { idempotentFrom: 'all' as never }),
    ).rejects.toSatisfy(
      (error) =>
        InvalidArgumentError.isInstance(error) &&
        /idempotentFrom.*'readOnlyHint', 'readOnlyOrIdempotentHint' or 'none'/.test(
          (error as Error).message,
        ),
    );
  });
});
