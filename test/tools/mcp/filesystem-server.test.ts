import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { mcpTools } from '../../../tools/mcp/mcp-tools.ts';
import { ofType, runTurn, settlements } from './mcp-run.ts';
import { startFilesystemServer, tempDir } from './mcp-servers.ts';

describe('mcpTools against @modelcontextprotocol/server-filesystem (stdio)', () => {
  it('reads without asking, asks before writing, and writes only what was allowed', async () => {
    const root = tempDir();
    writeFileSync(path.join(root, 'todo.txt'), 'buy milk\n');
    const tools = await mcpTools(await startFilesystemServer(root), { prefix: 'fs_' });
    expect(
      Object.entries(tools).flatMap(([name, tool]) => (tool.permission === 'ask' ? [name] : [])),
    ).toEqual(['fs_write_file', 'fs_edit_file', 'fs_create_directory', 'fs_move_file']);

    const done = path.join(root, 'done.txt');
    const refused = path.join(root, 'refused.txt');
    const asked: string[] = [];
    const { facts, outcome } = await runTurn({
      tools,
      script: [
        {
          toolCalls: [{ name: 'fs_read_text_file', input: { path: path.join(root, 'todo.txt') } }],
        },
        {
          toolCalls: [
            { name: 'fs_write_file', input: { path: done, content: 'milk bought\n' } },
            { name: 'fs_write_file', input: { path: refused, content: 'no\n' } },
            { name: 'fs_write_file', input: { path: path.join(root, 'no-content.txt') } },
            { name: 'fs_read_text_file', input: { path: '/etc/hostname' } },
          ],
        },
        { text: 'Done.' },
      ],
      answer: (pending) => {
        const target = (pending.input as { path: string }).path;
        asked.push(`${pending.name} ${path.basename(target)}`);
        return target === done ? 'allow' : 'deny';
      },
    });
    expect(outcome.status).toBe('completed');
    expect(asked).toEqual(['fs_write_file done.txt', 'fs_write_file refused.txt']);
    expect(settlements(facts)).toEqual([
      ['fs_read_text_file', 'success', 'buy milk\n'],
      ['fs_write_file', 'success', `Successfully wrote to ${done}`],
      [
        'fs_write_file',
        'denied',
        'This call was denied by the user; it was not run. Do not repeat it unchanged.',
      ],
      [
        'fs_write_file',
        'invalid',
        'Invalid input for tool "fs_write_file"; the call was not run. Fix these fields and call it again:\n- content: required, but it is missing',
      ],
      [
        'fs_read_text_file',
        'error',
        `The tool failed: Access denied - path outside allowed directories: /etc/hostname not in ${root}`,
      ],
    ]);
    expect(readFileSync(done, 'utf8')).toBe('milk bought\n');
    expect(existsSync(refused)).toBe(false);
    expect(existsSync(path.join(root, 'no-content.txt'))).toBe(false);
    expect(ofType(facts, 'tool.started').map((fact) => fact.name)).toEqual([
      'fs_read_text_file',
      'fs_write_file',
      'fs_read_text_file',
    ]);
  });
});

describe("the filesystem server's read_media_file", () => {
  it('reaches the model as one line, without the base64 it repeats in structuredContent', async () => {
    const root = tempDir();
    const bytes = Buffer.from(Array.from({ length: 30_000 }, (_, index) => (index * 7) % 256));
    writeFileSync(path.join(root, 'photo.png'), bytes);
    writeFileSync(path.join(root, 'data.bin'), bytes.subarray(0, 2_000));
    const tools = await mcpTools(await startFilesystemServer(root), { prefix: 'fs_' });
    let prompt: unknown;
    const { facts } = await runTurn({
      tools,
      script: [
        {
          toolCalls: [
            { name: 'fs_read_media_file', input: { path: path.join(root, 'photo.png') } },
            { name: 'fs_read_media_file', input: { path: path.join(root, 'data.bin') } },
          ],
        },
        (call) => {
          prompt = call.prompt;
          return { text: 'Done.' };
        },
      ],
    });
    const fileUrl = `file://${path.join(root, 'data.bin')}`;
    expect(settlements(facts)).toEqual([
      ['fs_read_media_file', 'success', '[image: image/png, 30000 bytes, not shown]'],
      [
        'fs_read_media_file',
        'success',
        `[resource: ${fileUrl}, application/octet-stream, 2000 bytes, not shown]`,
      ],
    ]);
    expect(JSON.stringify(prompt)).not.toContain(bytes.toString('base64').slice(0, 40));
    expect(JSON.stringify(prompt)).toContain('[image: image/png, 30000 bytes, not shown]');
  });
});
