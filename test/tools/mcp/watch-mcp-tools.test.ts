import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { hashJson } from '../../../events/json.ts';
import { InvalidArgumentError } from '../../../runtime-errors.ts';
import { toModelToolDefinitions } from '../../../tools/define-tool.ts';
import type { McpTool } from '../../../tools/mcp/mcp-tools.ts';
import { type WatchMcpToolsOptions, watchMcpTools } from '../../../tools/mcp/watch-mcp-tools.ts';
import { deferred } from '../../runtime/runtime-helpers.ts';
import { ofType, receivedCalls, runTurn, settlements } from './mcp-run.ts';
import { startTestServer } from './mcp-servers.ts';

describe('watchMcpTools', () => {
  it('applies tools/list_changed to the next run, never to the run in progress', async () => {
    const { client, records } = await startTestServer();
    const changed = deferred<Record<string, McpTool>>();
    const watch = await watchMcpTools(client, { onChange: changed.resolve });
    const before = watch.tools;
    expect(Object.keys(before)).not.toContain('notes_archive');

    // Run 1 unlocks notes.archive (the server sends list_changed) and then tries it.
    const first = await runTurn({
      tools: () => watch.tools,
      script: [
        { toolCalls: [{ name: 'unlock' }] },
        { toolCalls: [{ name: 'notes_archive', input: { name: 'todo' } }] },
        { text: 'It is not there yet.' },
      ],
    });
    const after = await changed.promise;
    expect(watch.tools).toBe(after);
    expect(Object.keys(after).filter((name) => name !== 'notes_archive')).toEqual(
      Object.keys(before),
    );
    expect(Object.keys(after)).toContain('notes_archive');
    const firstSteps = ofType(first.facts, 'step.started');
    expect(firstSteps.map((step) => step.request.toolsHash)).toEqual(
      Array(3).fill(hashJson(toModelToolDefinitions(before))),
    );
    expect(settlements(first.facts)[1]).toEqual([
      'notes_archive',
      'invalid',
      `Unknown tool "notes_archive"; the call was not run. Available tools: ${Object.keys(before).join(', ')}.`,
    ]);

    // Run 2 starts with the new set: the mapped name reaches the server under its MCP name.
    const second = await runTurn({
      tools: () => watch.tools,
      script: [
        { toolCalls: [{ name: 'notes_archive', input: { name: 'todo' } }] },
        { text: 'Archived.' },
      ],
    });
    const secondSteps = ofType(second.facts, 'step.started');
    expect(secondSteps.map((step) => step.request.toolsHash)).toEqual(
      Array(2).fill(hashJson(toModelToolDefinitions(after))),
    );
    expect(secondSteps[0]?.request.tools).toEqual(Object.keys(after));
    // destructiveHint: asked (and allowed by runTurn) before it ran.
    expect(ofType(second.facts, 'tool.permission.requested').map((fact) => fact.name)).toEqual([
      'notes_archive',
    ]);
    expect(settlements(second.facts)).toEqual([['notes_archive', 'success', 'Archived todo.']]);
    expect(receivedCalls(records())).toEqual([
      ['unlock', {}],
      ['notes.archive', { name: 'todo' }],
    ]);
    watch.close();
  });

  it('keeps the previous set and reports the error when a refresh fails', async () => {
    let listings = 0;
    const server = new Server(
      { name: 'flaky', version: '1.0.0' },
      { capabilities: { tools: { listChanged: true } } },
    );
    server.setRequestHandler(ListToolsRequestSchema, () => {
      listings += 1;
      if (listings > 1) throw new Error('the tool registry is down');
      return { tools: [{ name: 'a', inputSchema: { type: 'object' } }] };
    });
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const client = new Client({ name: 'turnlog-tests', version: '1.0.0' });
    await client.connect(clientSide);
    const failed = deferred<unknown>();
    const watch = await watchMcpTools(client, { onError: failed.resolve });
    const before = watch.tools;
    await server.sendToolListChanged();
    expect(String(await failed.promise)).toBe(
      'McpError: MCP error -32603: the tool registry is down',
    );
    expect(watch.tools).toBe(before);
    expect(Object.keys(before)).toEqual(['a']);
    watch.close();

    const refused = (options: unknown) => watchMcpTools(client, options as WatchMcpToolsOptions);
    await expect(refused(null)).rejects.toThrow(
      'watchMcpTools: options must be an object (got null)',
    );
    await expect(refused({ onError: 'log' })).rejects.toSatisfy(InvalidArgumentError.isInstance);
    await expect(refused({ onChange: 1 })).rejects.toThrow(
      'watchMcpTools: options.onChange must be a function (got number)',
    );
    await client.close();
  });
});
