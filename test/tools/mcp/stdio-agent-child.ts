// An agent that starts the lingering MCP server over stdio, calls it once, prints `ready`, and
// then ends without closing its client: `exit` exits at once, `kill` waits for the parent's
// SIGKILL. `guarded` starts the server through mcpStdioServer, `plain` as the SDK does.
//   node test/tools/mcp/stdio-agent-child.ts <guarded|plain> <exit|kill> <side file>
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { mcpStdioServer } from '../../../tools/mcp/mcp-stdio-server.ts';

const [mode, end, sideFile] = process.argv.slice(2);
if (sideFile === undefined) throw new Error('usage: stdio-agent-child.ts <mode> <end> <side file>');
const server = {
  command: process.execPath,
  args: [new URL('./lingering-server.ts', import.meta.url).pathname, sideFile],
};
const client = new Client({ name: 'stdio-agent-child', version: '1.0.0' });
await client.connect(
  new StdioClientTransport(mode === 'guarded' ? mcpStdioServer(server) : server),
);
await client.callTool({ name: 'ping' });
process.stdout.write('ready\n');
if (end === 'exit') process.exit(0);
setInterval(() => {}, 1 << 30);
