// An agent whose tools come from an MCP server: the published filesystem server
// (@modelcontextprotocol/server-filesystem), run over stdio on a fresh temp folder holding a
// to-do list. It reads without asking (the server annotates those tools read-only) and asks
// before every edit or write (annotated destructive); answer y/n on stdin.
//
// Run: npx node examples/mcp-agent.ts
//   Offline with a scripted model unless OPENAI_API_KEY or GOOGLE_GENERATIVE_AI_API_KEY is set.
//   The log lives in .turnlog/mcp-agent/ (under TURNLOG_DIR if set); the folder stays in the
//   system's temp directory for you to look at.
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import {
  createRuntime,
  type JsonObject,
  lowdbStore,
  mcpStdioServer,
  mcpTools,
  recordedStateHasTag,
} from '../index.ts';
import { pickModel, type ScriptedCall } from './pick-model.ts';
import { createTerminalPrompt } from './terminal-prompt.ts';

const folder = await mkdtemp(path.join(tmpdir(), 'turnlog-mcp-agent-'));
await writeFile(path.join(folder, 'todo.md'), '- [ ] buy milk\n- [ ] call Ana\n');
console.log(`folder: ${folder}`);

// In an app: mcpStdioServer({ command: 'npx', args: ['-y', '@modelcontextprotocol/server-filesystem', folder] })
const server = new URL(
  import.meta.resolve('@modelcontextprotocol/server-filesystem/dist/index.js'),
);
const client = new Client({ name: 'turnlog-mcp-agent', version: '1.0.0' });
await client.connect(
  new StdioClientTransport({
    // Under turnlog's stdio guard: the server ends with this process, even when it is killed.
    ...mcpStdioServer({ command: process.execPath, args: [server.pathname, folder] }),
    // stderr: 'ignore' keeps the server's start-up banner out of the transcript.
    stderr: 'ignore',
  }),
);
const tools = await mcpTools(client, { prefix: 'fs_' });
const { name, version } = client.getServerVersion() ?? { name: '?', version: '?' };
const asks = Object.keys(tools).filter((tool) => tools[tool]?.permission === 'ask');
console.log(
  `MCP server ${name} ${version}: ${Object.keys(tools).length} tools; asks before ${asks.join(', ')}`,
);

const runtime = createRuntime({
  model: await pickModel(notesAgentReply),
  system:
    "You keep the user's notes in the folder the fs_ tools may use. Keep your messages short.",
  store: lowdbStore({ dir: path.join(process.env.TURNLOG_DIR ?? '.turnlog', 'mcp-agent') }),
  tools,
});
// A run left unfinished by an earlier start (killed) had another folder and server: end it.
for (const found of await runtime.recover()) {
  if (found.status === 'resumed' || found.status === 'parked') {
    await runtime.stop({ sessionId: found.sessionId, reason: 'its MCP server is gone' });
  }
}
const prompt = createTerminalPrompt();
const task = 'Check off "buy milk" in my to-do list, and note it in done.md.';
console.log(`you: ${task}`);
const turn = await runtime.send({ sessionId: `mcp-agent-${Date.now()}`, text: task });
let midLine = false;
const line = (text: string) => {
  console.log(`${midLine ? '\n' : ''}${text}`);
  midLine = false;
};
for await (const event of turn.events) {
  if (event.type === 'text.delta') {
    process.stdout.write(event.text);
    midLine = !event.text.endsWith('\n');
  }
  if (event.type === 'tool.started') line(`→ ${describeCall(event.name, event.input)}`);
  if (event.type === 'tool.settled') line(`← ${event.outcome}: ${excerpt(event.text)}`);
  if ('seq' in event && recordedStateHasTag(event.state, 'needsPerson')) {
    if (midLine) process.stdout.write('\n');
    midLine = false;
    for (const pending of await runtime.pending(turn.sessionId)) {
      showChange(pending.input as JsonObject);
      const answer = await prompt.choose(`Allow ${describeCall(pending.name, pending.input)}?`, [
        'yes',
        'no',
      ] as const);
      if (answer === undefined) {
        console.log('No answer on stdin: stopping the run.');
        await runtime.stop({ sessionId: turn.sessionId, reason: 'no answer on stdin' });
        break;
      }
      const decision = answer === 'yes' ? 'allow' : 'deny';
      await runtime.decide({ sessionId: turn.sessionId, callId: pending.callId, decision });
    }
  }
}
if (midLine) process.stdout.write('\n');
const result = await turn.done;
console.log(`\nrun ${result.status} (${result.reason}) after ${result.steps} steps.`);
prompt.close();
await runtime.close();
await client.close(); // ends the server process

/** One line for a call: the tool and the file it touches, relative to the folder. */
function describeCall(tool: string, input: unknown): string {
  const values = input as { path?: string; edits?: unknown[]; content?: string };
  const file = values.path === undefined ? '' : ` ${path.relative(folder, values.path) || '.'}`;
  if (values.edits !== undefined) return `${tool}${file} (${values.edits.length} edit)`;
  if (values.content !== undefined) return `${tool}${file} (${values.content.length} characters)`;
  return `${tool}${file}`;
}

/** What an edit or a write would change, before the person answers. */
function showChange(input: JsonObject) {
  for (const edit of (input.edits ?? []) as { oldText: string; newText: string }[]) {
    console.log(`  - ${edit.oldText}\n  + ${edit.newText}`);
  }
  if (typeof input.content === 'string') {
    for (const text of input.content.trimEnd().split('\n')) console.log(`  + ${text}`.trimEnd());
  }
}

/** The first lines of a tool's text. */
function excerpt(text: string, lines = 10): string {
  const all = text.trimEnd().split('\n');
  const more = all.length - lines;
  const shown = all.slice(0, lines).join('\n    ');
  return more > 0 ? `${shown}\n    … (${more} more line${more === 1 ? '' : 's'})` : shown;
}

/**
 * The offline model: the next step from the tool results so far (a function of the
 * conversation, like the coding agent's), using only what the server told it.
 */
function notesAgentReply(call: ScriptedCall) {
  const results = call.prompt.flatMap((message) =>
    message.role === 'tool'
      ? message.content.flatMap((part) =>
          part.type === 'tool-result' &&
          (part.output.type === 'text' || part.output.type === 'error-text')
            ? [{ tool: part.toolName, text: part.output.value }]
            : [],
        )
      : [],
  );
  const last = results.at(-1);
  const words = (text: string) => text.match(/(\S+\s*){1,3}/g) ?? [text];
  const act = (text: string, tool: string, input: JsonObject) => ({
    text: words(text),
    toolCalls: [{ name: tool, input }],
  });
  const say = (text: string) => ({ text: words(text) });
  const dir = results.find((result) => result.tool === 'fs_list_allowed_directories')?.text;
  const home = dir?.split('\n')[1] ?? '.';
  switch (last?.tool) {
    case undefined:
      return act('Let me see which folder I may use.', 'fs_list_allowed_directories', {});
    case 'fs_list_allowed_directories':
      return act('Looking at the notes in it.', 'fs_list_directory', { path: home });
    case 'fs_list_directory':
      return act('Reading the to-do list.', 'fs_read_text_file', {
        path: path.join(home, 'todo.md'),
      });
    case 'fs_read_text_file':
      return act('Checking off "buy milk".', 'fs_edit_file', {
        path: path.join(home, 'todo.md'),
        edits: [{ oldText: '- [ ] buy milk', newText: '- [x] buy milk' }],
      });
    case 'fs_edit_file':
      return last.text.startsWith('This call was denied')
        ? say('Understood, I left todo.md as it was.')
        : act('Now the note in done.md.', 'fs_write_file', {
            path: path.join(home, 'done.md'),
            content: '# Done\n\n- buy milk\n',
          });
    default:
      return last?.text.startsWith('This call was denied')
        ? say('Understood, no done.md. "buy milk" is checked off in todo.md.')
        : say('Done: "buy milk" is checked off in todo.md and noted in done.md.');
  }
}
