import { describe, expect, it } from 'vitest';
import { toModelToolDefinitions } from '../../../tools/define-tool.ts';
import { mcpTools } from '../../../tools/mcp/mcp-tools.ts';
import { ofType, receivedCalls, runTurn, settlements, waitForRecord } from './mcp-run.ts';
import { startTestServer } from './mcp-servers.ts';

const readNoteSchema = {
  type: 'object',
  properties: { name: { type: 'string', minLength: 1 } },
  required: ['name'],
  $schema: 'http://json-schema.org/draft-07/schema#',
};

describe('mcpTools against the project test server (stdio)', () => {
  it("shows the model each tool's own JSON Schema, and allows only read-only-annotated tools by default", async () => {
    const { client } = await startTestServer();
    const tools = await mcpTools(client);
    expect(Object.entries(tools).map(([name, tool]) => [name, tool.permission])).toEqual([
      ['read_note', 'allow'],
      ['write_note', 'ask'], // destructiveHint
      ['append_log', 'ask'], // no annotations
      ['send_mail', 'ask'], // readOnlyHint: false, openWorldHint
      ['slow_write', 'ask'],
      ['fail', 'allow'],
      ['stats', 'allow'],
      ['snapshot', 'allow'],
      ['photo', 'allow'],
      ['huge', 'allow'],
      ['exit', 'ask'],
      ['unlock', 'allow'],
    ]);
    expect(toModelToolDefinitions(tools)[0]).toEqual({
      name: 'read_note',
      description: 'Reads a note by name.',
      inputSchema: readNoteSchema,
    });
  });

  it('runs a read-only tool without asking, sending exactly the validated input once', async () => {
    const { client, records } = await startTestServer();
    const { facts, outcome } = await runTurn({
      tools: await mcpTools(client),
      script: [{ toolCalls: [{ name: 'read_note', input: { name: 'todo' } }] }, { text: 'ok' }],
    });
    expect(outcome.status).toBe('completed');
    expect(ofType(facts, 'tool.permission.requested')).toEqual([]);
    expect(ofType(facts, 'tool.permission.decided').map((fact) => fact.by)).toEqual(['policy']);
    expect(settlements(facts)).toEqual([['read_note', 'success', 'buy milk']]);
    expect(receivedCalls(records())).toEqual([['read_note', { name: 'todo' }]]);
  });

  it('asks before a destructive tool; allowed, the server gets the input the person saw', async () => {
    const { client, records } = await startTestServer();
    const input = { name: 'plan', text: 'ship it' };
    const asked: unknown[] = [];
    const { facts } = await runTurn({
      tools: await mcpTools(client),
      script: [{ toolCalls: [{ name: 'write_note', input }] }, { text: 'ok' }],
      answer: (pending) => {
        asked.push(pending.input);
        return 'allow';
      },
    });
    expect(asked).toEqual([input]);
    const [requested] = ofType(facts, 'tool.permission.requested');
    const [started] = ofType(facts, 'tool.started');
    expect(started?.inputHash).toBe(requested?.inputHash);
    expect(started?.seq).toBeGreaterThan(requested?.seq ?? Number.POSITIVE_INFINITY);
    expect(settlements(facts)).toEqual([
      ['write_note', 'success', 'Saved note plan (7 characters).'],
    ]);
    expect(receivedCalls(records())).toEqual([['write_note', input]]);
  });

  it('never calls the server for a denied call', async () => {
    const { client, records } = await startTestServer();
    const { facts } = await runTurn({
      tools: await mcpTools(client),
      script: [
        { toolCalls: [{ name: 'append_log', input: { line: 'hello' } }] },
        { toolCalls: [{ name: 'read_note', input: { name: 'todo' } }] },
        { text: 'ok' },
      ],
      answer: () => 'deny',
    });
    expect(settlements(facts)).toEqual([
      [
        'append_log',
        'denied',
        'This call was denied by the user; it was not run. Do not repeat it unchanged.',
      ],
      ['read_note', 'success', 'buy milk'],
    ]);
    expect(receivedCalls(records())).toEqual([['read_note', { name: 'todo' }]]);
  });

  it('settles input that fails the server schema invalid, naming each field, and never sends it', async () => {
    const { client, records } = await startTestServer();
    const asked: string[] = [];
    const { facts } = await runTurn({
      tools: await mcpTools(client),
      script: [
        {
          toolCalls: [
            { name: 'send_mail', input: { to: 'someone' } },
            { name: 'read_note', input: { name: '' } },
            { name: 'huge', input: { chars: 2.5 } },
          ],
        },
        { text: 'ok' },
      ],
      answer: (pending) => {
        asked.push(pending.name);
        return 'allow';
      },
    });
    const fix = 'the call was not run. Fix these fields and call it again:';
    expect(settlements(facts)).toEqual([
      [
        'send_mail',
        'invalid',
        `Invalid input for tool "send_mail"; ${fix}\n- subject: required, but it is missing\n- to: must match pattern "^(?:[A-Za-z0-9_'+\\-]+\\.)*[A-Za-z0-9_'+\\-]*[A-Za-z0-9_+-]@(?:[A-Za-z0-9][A-Za-z0-9\\-]*\\.)+[A-Za-z]{2,}$"\n- to: must match format "email"`,
      ],
      [
        'read_note',
        'invalid',
        `Invalid input for tool "read_note"; ${fix}\n- name: must NOT have fewer than 1 characters`,
      ],
      ['huge', 'invalid', `Invalid input for tool "huge"; ${fix}\n- chars: must be integer`],
    ]);
    expect(asked).toEqual([]);
    expect(receivedCalls(records())).toEqual([]);
  });

  it('settles isError results as error, and makes text of structured, image, audio and resource content', async () => {
    const { client } = await startTestServer();
    const { facts } = await runTurn({
      tools: await mcpTools(client),
      script: [
        { toolCalls: [{ name: 'fail' }, { name: 'stats' }, { name: 'snapshot' }] },
        { text: 'ok' },
      ],
    });
    expect(settlements(facts)).toEqual([
      ['fail', 'error', 'The tool failed: disk quota exceeded'],
      ['stats', 'success', '1 note(s)\n{"count":1,"names":["todo"]}'],
      [
        'snapshot',
        'success',
        [
          'Here is everything.',
          '[image: image/png, 68 bytes, not shown]',
          '[audio: audio/wav, 12 bytes, not shown]',
          '[resource: note://todo, text/plain]',
          'buy milk',
          '[resource: note://blob, application/octet-stream, 3 bytes, not shown]',
          '[resource link: note://archive, "archive", text/plain] Older notes.',
        ].join('\n'),
      ],
    ]);
  });

  it("never puts the base64 of an image, audio or blob into the model's text, however the server repeats it", async () => {
    const { client } = await startTestServer();
    let prompt: unknown;
    const { facts } = await runTurn({
      tools: await mcpTools(client),
      script: [
        { toolCalls: [{ name: 'photo' }] },
        (call) => {
          prompt = call.prompt;
          return { text: 'ok' };
        },
      ],
    });
    const image = '[image: image/png, 30000 bytes, not shown]';
    const sound = '[audio: audio/wav, 3000 bytes, not shown]';
    const file = '[resource: file:///data.bin, application/octet-stream, 2000 bytes, not shown]';
    const structured = {
      content: [
        { type: 'image', data: image, mimeType: 'image/png' },
        { type: 'audio', data: sound, mimeType: 'audio/wav' },
        {
          type: 'resource',
          resource: { uri: 'file:///data.bin', mimeType: 'application/octet-stream', blob: file },
        },
      ],
      preview: `data:image/png;base64,${image}`,
      thumbnail: '[base64 data, 2000 bytes, not shown]',
    };
    const text = [
      `Here it is: data:image/png;base64,${image}`,
      image,
      sound,
      file,
      JSON.stringify(structured),
    ].join('\n');
    expect(settlements(facts)).toEqual([['photo', 'success', text]]);
    // No run of 40 base64 characters anywhere the model reads, nor in the log.
    const base64Run = /[A-Za-z0-9+/]{40,}/;
    expect(JSON.stringify(prompt)).not.toMatch(base64Run);
    expect(JSON.stringify(prompt)).toContain('[image: image/png, 30000 bytes, not shown]');
    expect(JSON.stringify(facts)).not.toMatch(base64Run);
  });

  it('cuts a long result to toolOutputChars, keeping its end', async () => {
    const { client } = await startTestServer();
    const { facts } = await runTurn({
      tools: await mcpTools(client),
      script: [{ toolCalls: [{ name: 'huge', input: { chars: 30_000 } }] }, { text: 'ok' }],
      limits: { toolOutputChars: 1_000 },
    });
    const [settled] = ofType(facts, 'tool.settled');
    expect(settled?.outcome).toBe('success');
    expect(settled?.truncated).toBe(true);
    expect(settled?.text.length).toBeLessThanOrEqual(1_000);
    expect(settled?.text).toMatch(/^x{100,}\n\[… 29\d\d\d characters cut here\..*\]\nx+end$/s);
  });

  it('takes the permission option over the annotations, and only the included tools, prefixed', async () => {
    const { client, records } = await startTestServer();
    const tools = await mcpTools(client, {
      include: ['read_note', 'write_note'],
      prefix: 'notes_',
      permission: { read_note: 'ask', write_note: 'allow' },
    });
    expect(Object.entries(tools).map(([name, tool]) => [name, tool.permission])).toEqual([
      ['notes_read_note', 'ask'],
      ['notes_write_note', 'allow'],
    ]);
    const asked: string[] = [];
    const { facts } = await runTurn({
      tools,
      script: [
        {
          toolCalls: [
            { name: 'notes_write_note', input: { name: 'a', text: 'b' } },
            { name: 'notes_read_note', input: { name: 'todo' } },
          ],
        },
        { text: 'ok' },
      ],
      answer: (pending) => {
        asked.push(pending.name);
        return 'allow';
      },
    });
    expect(asked).toEqual(['notes_read_note']);
    expect(settlements(facts)).toEqual([
      ['notes_write_note', 'success', 'Saved note a (1 characters).'],
      ['notes_read_note', 'success', 'buy milk'],
    ]);
    // The two calls run concurrently: the server may receive them in either order.
    expect(receivedCalls(records()).sort(([a], [b]) => String(a).localeCompare(String(b)))).toEqual(
      [
        ['read_note', { name: 'todo' }],
        ['write_note', { name: 'a', text: 'b' }],
      ],
    );
  });

  it('cancels the MCP request when the run is stopped during a slow call: the server sees notifications/cancelled', async () => {
    const { client, sideFile, records } = await startTestServer();
    const { facts, outcome } = await runTurn({
      tools: await mcpTools(client, { permission: { slow_write: 'allow' } }),
      script: [{ toolCalls: [{ name: 'slow_write', input: { name: 'draft' } }] }],
      onFact: (fact, runtime) => {
        if (fact.type !== 'tool.started') return;
        // Stop only once the server's handler is running, so it is the handler that is cancelled.
        void waitForRecord(sideFile, (record) => record.handler === 'slow_write').then(() =>
          runtime.stop({ sessionId: 's1', reason: 'the user pressed stop' }),
        );
      },
    });
    expect(outcome).toMatchObject({ status: 'aborted', reason: 'stop_requested' });
    expect(settlements(facts)).toEqual([
      [
        'slow_write',
        'cancelled',
        'The run was stopped while this call was running; the tool ended with: the request was cancelled (the server was sent notifications/cancelled). It may have partly run; inspect the current state before retrying.',
      ],
    ]);
    await waitForRecord(sideFile, (record) => record.event === 'aborted');
    expect(records()).toEqual([
      { received: 'tools/call', name: 'slow_write', arguments: { name: 'draft' } },
      { handler: 'slow_write', event: 'started', name: 'draft' },
      { received: 'notifications/cancelled', reason: 'Error: the user pressed stop' },
      {
        handler: 'slow_write',
        event: 'aborted',
        name: 'draft',
        reason: 'Error: the user pressed stop',
      },
    ]);
  });

  it('cancels the MCP request at the tool timeout and settles error', async () => {
    const { client, sideFile, records } = await startTestServer();
    const { facts, outcome } = await runTurn({
      tools: await mcpTools(client, { permission: { slow_write: 'allow' }, timeoutMs: 300 }),
      script: [{ toolCalls: [{ name: 'slow_write', input: { name: 'draft' } }] }, { text: 'ok' }],
    });
    expect(outcome.status).toBe('completed');
    expect(settlements(facts)).toEqual([
      [
        'slow_write',
        'error',
        'The tool did not finish within its timeout of 300 ms and was abandoned. It may have partly run; inspect the current state before retrying.',
      ],
    ]);
    await waitForRecord(sideFile, (record) => record.event === 'aborted');
    expect(records().filter((record) => 'received' in record)).toEqual([
      { received: 'tools/call', name: 'slow_write', arguments: { name: 'draft' } },
      {
        received: 'notifications/cancelled',
        reason: 'TimeoutError: The tool did not finish within 300 ms',
      },
    ]);
  });

  it('settles a clear error when the server dies mid-call, and the run goes on', async () => {
    const { client, records } = await startTestServer();
    const { facts, outcome } = await runTurn({
      tools: await mcpTools(client),
      script: [
        { toolCalls: [{ name: 'exit' }] },
        { toolCalls: [{ name: 'read_note', input: { name: 'todo' } }] },
        { text: 'The notes server is gone.' },
      ],
    });
    expect(outcome).toMatchObject({ status: 'completed', reason: 'end_turn' });
    expect(settlements(facts)).toEqual([
      [
        'exit',
        'error',
        'The tool failed: the connection to the MCP server "turnlog-test" closed during the call (the server exited or its transport failed); the call may have partly run, inspect the state before retrying',
      ],
      [
        'read_note',
        'error',
        'The tool failed: the MCP server "turnlog-test" is not connected (it exited, or its client was closed), so the call was not sent; calls to it fail until the client connects again',
      ],
    ]);
    expect(receivedCalls(records())).toEqual([['exit', {}]]);
  });
});
