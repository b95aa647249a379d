// MCP crash-test child: an agent whose one tool call (slow_write, on the project's MCP test
// server, which it starts over stdio) never finishes by itself, so the parent can SIGKILL it
// mid-call; started again with mode `recover`, it recovers the run and resolves the
// indeterminate call with `report-unknown`. One line on stdout per event:
//   fact <type> [callId]         a fact is durable
//   recovered <status> <ids>     what recover() found
//   ended <status> <reason>      the run ended
// Usage: node test/tools/mcp/mcp-agent-child.ts '{"mode":"start"|"recover","dir":…,"sideFile":…}'
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  getDefaultEnvironment,
  StdioClientTransport,
} from '@modelcontextprotocol/sdk/client/stdio.js';
import { scriptedModel } from '../../../adapters/scripted-model.ts';
import type { TurnHandle } from '../../../machines/effects/turn-channel.ts';
import { createRuntime } from '../../../runtime.ts';
import { lowdbStore } from '../../../store/folder/lowdb-store.ts';
import { mcpTools } from '../../../tools/mcp/mcp-tools.ts';

const options = JSON.parse(process.argv[2] ?? '{}') as {
  mode: 'start' | 'recover';
  dir: string;
  sideFile: string;
  compileCache: string;
};
const sessionId = 'mcp-crash';
const print = (line: string) => process.stdout.write(`${line}\n`);

const client = new Client({ name: 'mcp-agent-child', version: '1.0.0' });
await client.connect(
  new StdioClientTransport({
    command: process.execPath,
    args: [new URL('./test-server.ts', import.meta.url).pathname, options.sideFile],
    env: { ...getDefaultEnvironment(), NODE_COMPILE_CACHE: options.compileCache },
  }),
);
const runtime = createRuntime({
  // A function of the conversation: the recovered run, in a new process, continues from the log.
  model: scriptedModel((call) => {
    const answered = call.prompt.some((message) => message.role === 'tool');
    return answered
      ? { text: 'I cannot tell whether the draft was saved.' }
      : { toolCalls: [{ id: 'call_1', name: 'slow_write', input: { name: 'draft' } }] };
  }),
  tools: await mcpTools(client, { permission: { slow_write: 'allow' } }),
  store: lowdbStore({ dir: options.dir }),
});

let turn: TurnHandle | undefined;
if (options.mode === 'start') {
  turn = await runtime.send({ sessionId, text: 'Save the draft.' });
} else {
  const [found] = await runtime.recover();
  if (found === undefined || found.status === 'damaged') throw new Error('nothing to recover');
  print(`recovered ${found.status} ${found.indeterminate.join(',')}`);
  for (const pending of await runtime.pending(sessionId)) {
    await runtime.decide({ sessionId, callId: pending.callId, decision: 'report-unknown' });
  }
  turn = found.turn;
}
for await (const event of turn.events) {
  if ('seq' in event) print(`fact ${event.type}${'callId' in event ? ` ${event.callId}` : ''}`);
}
const result = await turn.done;
print(`ended ${result.status} ${result.reason}`);
await runtime.close();
await client.close();
