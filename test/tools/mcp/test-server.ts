// The project's own MCP test server, run as a child process over stdio by the MCP tests:
//   node test/tools/mcp/test-server.ts <side file>
// Its tools cover what a client meets in the wild: read-only, destructive, open-world and
// unannotated tools, a slow one, a failing one, structured and image content, one that kills
// the server mid-call, and one that changes the tool list. Every `tools/call` request and every
// `notifications/cancelled` the server receives, and what its handlers saw, is appended to the
// side file (one JSON object a line, written synchronously), so a test can prove what reached
// the server — even after the agent process was killed.
import { appendFileSync } from 'node:fs';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

const sideFile = process.argv[2];
if (sideFile === undefined) throw new Error('usage: test-server.ts <side file>');
const record = (entry: Record<string, unknown>) =>
  appendFileSync(sideFile, `${JSON.stringify(entry)}\n`);

const text = (value: string) => ({ content: [{ type: 'text' as const, text: value }] });
const notes = new Map([['todo', 'buy milk']]);
/** A 1×1 transparent PNG. */
const png =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=';

const server = new McpServer({ name: 'turnlog-test', version: '1.0.0' });

server.registerTool(
  'read_note',
  {
    description: 'Reads a note by name.',
    inputSchema: { name: z.string().min(1) },
    annotations: { readOnlyHint: true },
  },
  ({ name }) => text(notes.get(name) ?? `(no note named ${name})`),
);

server.registerTool(
  'write_note',
  {
    description: 'Writes a note, replacing one of the same name.',
    inputSchema: { name: z.string().min(1), text: z.string() },
    annotations: { destructiveHint: true },
  },
  ({ name, text: body }) => {
    notes.set(name, body);
    record({ handler: 'write_note', name, text: body });
    return text(`Saved note ${name} (${body.length} characters).`);
  },
);

server.registerTool(
  'append_log',
  {
    description: 'Appends a line to the log (no annotations).',
    inputSchema: { line: z.string() },
  },
  ({ line }) => text(`Appended: ${line}`),
);

server.registerTool(
  'send_mail',
  {
    description: 'Sends an e-mail.',
    inputSchema: { to: z.email(), subject: z.string().max(80) },
    annotations: { readOnlyHint: false, openWorldHint: true },
  },
  ({ to }) => text(`Sent to ${to}.`),
);

server.registerTool(
  'slow_write',
  {
    description: 'Writes slowly: it waits until the request is cancelled.',
    inputSchema: { name: z.string() },
    annotations: { destructiveHint: true },
  },
  ({ name }, extra) => {
    record({ handler: 'slow_write', event: 'started', name });
    return new Promise((resolve) => {
      extra.signal.addEventListener('abort', () => {
        record({
          handler: 'slow_write',
          event: 'aborted',
          name,
          reason: String(extra.signal.reason),
        });
        resolve(text('cancelled'));
      });
    });
  },
);

server.registerTool(
  'fail',
  {
    description: 'Always fails.',
    inputSchema: {},
    annotations: { readOnlyHint: true },
  },
  () => ({ ...text('disk quota exceeded'), isError: true }),
);

server.registerTool(
  'stats',
  {
    description: 'Counts the notes.',
    inputSchema: {},
    outputSchema: { count: z.number(), names: z.array(z.string()) },
    annotations: { readOnlyHint: true },
  },
  () => {
    const names = [...notes.keys()];
    return {
      ...text(`${names.length} note(s)`),
      structuredContent: { count: names.length, names },
    };
  },
);

server.registerTool(
  'snapshot',
  {
    description: 'Returns every kind of content.',
    inputSchema: {},
    annotations: { readOnlyHint: true },
  },
  () => ({
    content: [
      { type: 'text', text: 'Here is everything.' },
      { type: 'image', data: png, mimeType: 'image/png' },
      { type: 'audio', data: 'UklGRgAAAABXQVZF', mimeType: 'audio/wav' },
      {
        type: 'resource',
        resource: { uri: 'note://todo', mimeType: 'text/plain', text: 'buy milk' },
      },
      {
        type: 'resource',
        resource: { uri: 'note://blob', mimeType: 'application/octet-stream', blob: 'AAEC' },
      },
      {
        type: 'resource_link',
        uri: 'note://archive',
        name: 'archive',
        mimeType: 'text/plain',
        description: 'Older notes.',
      },
    ],
  }),
);

server.registerTool(
  'photo',
  {
    description: 'Returns a 30 KB image, a sound and a file, repeating their data everywhere.',
    inputSchema: {},
    annotations: { readOnlyHint: true },
  },
  () => {
    // Bytes 0…255 over and over: base64 that no text says by chance.
    const bytes = (size: number, start: number) =>
      Buffer.from(Array.from({ length: size }, (_, index) => (index * 7 + start) % 256));
    const image = bytes(30_000, 1).toString('base64');
    const sound = bytes(3_000, 2).toString('base64');
    const file = bytes(2_000, 3).toString('base64');
    const blocks = [
      { type: 'image' as const, data: image, mimeType: 'image/png' },
      { type: 'audio' as const, data: sound, mimeType: 'audio/wav' },
      {
        type: 'resource' as const,
        resource: { uri: 'file:///data.bin', mimeType: 'application/octet-stream', blob: file },
      },
    ];
    return {
      content: [
        { type: 'text' as const, text: `Here it is: data:image/png;base64,${image}` },
        ...blocks,
      ],
      structuredContent: {
        content: blocks,
        preview: `data:image/png;base64,${image}`,
        thumbnail: bytes(2_000, 4).toString('base64'),
      },
    };
  },
);

server.registerTool(
  'huge',
  {
    description: 'Returns a long text.',
    inputSchema: { chars: z.number().int().min(1).max(1_000_000) },
    annotations: { readOnlyHint: true },
  },
  ({ chars }) => text(`${'x'.repeat(chars - 3)}end`),
);

server.registerTool(
  'exit',
  {
    description: 'Ends the server process in the middle of the call.',
    inputSchema: {},
  },
  () => {
    record({ handler: 'exit' });
    process.exit(3);
  },
);

const archive = server.registerTool(
  'notes.archive',
  {
    description: 'Archives a note (hidden until unlock is called).',
    inputSchema: { name: z.string() },
    annotations: { destructiveHint: true },
  },
  ({ name }) => text(`Archived ${name}.`),
);
archive.disable();

server.registerTool(
  'unlock',
  {
    description: 'Makes notes.archive available (the tool list changes).',
    inputSchema: {},
    annotations: { readOnlyHint: true },
  },
  () => {
    archive.enable();
    return text('notes.archive is available now.');
  },
);

const transport = new StdioServerTransport();
await server.connect(transport);
// Record what reaches the server before the SDK validates or dispatches it.
const dispatch = transport.onmessage;
transport.onmessage = (message) => {
  if ('method' in message && message.method === 'tools/call') {
    record({
      received: 'tools/call',
      name: message.params?.name,
      arguments: message.params?.arguments,
    });
  }
  if ('method' in message && message.method === 'notifications/cancelled') {
    record({ received: 'notifications/cancelled', reason: message.params?.reason });
  }
  dispatch?.(message);
};
// The client went away (closed our stdin, or its process died): end with it.
process.stdin.on('close', () => process.exit(0));
