// An MCP server that outlives its client unless something ends it, as servers with background
// work do: a timer keeps it running after its stdin ends, and it has started a helper process
// of its own. Writes `{ "server": <pid>, "helper": <pid> }` to its side file once it listens.
//   node test/tools/mcp/lingering-server.ts <side file>
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';

const sideFile = process.argv[2];
if (sideFile === undefined) throw new Error('usage: lingering-server.ts <side file>');
const helper = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1 << 30)'], {
  stdio: 'ignore',
});
setInterval(() => {}, 1 << 30);

const server = new McpServer({ name: 'lingering', version: '1.0.0' });
server.registerTool('ping', { description: 'Answers pong.', inputSchema: {} }, () => ({
  content: [{ type: 'text', text: 'pong' }],
}));
await server.connect(new StdioServerTransport());
writeFileSync(sideFile, JSON.stringify({ server: process.pid, helper: helper.pid }));
