import { constants } from 'node:fs';
import { z } from 'zod';
import { defineTool } from '../define-tool.ts';
import type { Tool, ToolPermission } from '../tool.ts';
import { openInside } from './confined-files.ts';
import { displayPath, type Workspace } from './workspace-path.ts';

/** The validated input of `readFile`. */
export interface ReadFileInput {
  /** Relative to the workspace root (checked). */
  path: string;
  offset: number;
  limit: number;
}

/** Options of the `readFile` tool. */
export interface ReadFileOptions {
  /** Default `'allow'`. */
  permission?: ToolPermission<ReadFileInput>;
  /** Bytes read when the model gives no `limit` (default 64 KiB). */
  defaultBytes?: number;
  /** The largest `limit` the model may ask for (default 256 KiB). */
  maxBytes?: number;
}

/**
 * `readFile`: reads a bounded window of a file inside the workspace, as text with a first line
 * saying which bytes were read, the file's total size, and where to go on when there is more.
 */
export function readFileTool(
  workspace: Workspace,
  options: ReadFileOptions = {},
): Tool<ReadFileInput, string> {
  const maxBytes = options.maxBytes ?? 256 * 1024;
  const defaultBytes = Math.min(options.defaultBytes ?? 64 * 1024, maxBytes);
  return defineTool({
    description: `Read a text file in the workspace. Reads at most ${defaultBytes} bytes from \`offset\` unless \`limit\` says otherwise (up to ${maxBytes}); the first line of the result gives the byte range, the total size and the offset to continue from.`,
    inputSchema: z.object({
      path: workspace.pathSchema('File path relative to the workspace root'),
      offset: z.number().int().min(0).default(0).describe('Byte offset to start reading at'),
      limit: z
        .number()
        .int()
        .min(1)
        .max(maxBytes)
        .default(defaultBytes)
        .describe('Most bytes to read'),
    }),
    permission: options.permission ?? 'allow',
    // Reads only: running it again after a restart changes nothing.
    idempotent: true,
    execute: async ({ path, offset, limit }) => {
      const target = workspace.resolveOrThrow(path);
      const shown = displayPath(target.relative);
      if (!target.exists) throw new Error(`${shown} does not exist`);
      if (target.relative === '.') throw new Error(`${shown} is a directory; use listFiles`);
      // O_NONBLOCK: opening a named pipe would otherwise wait for a writer, holding one of
      // libuv's few file-system threads (and with them every other fs call) forever.
      const handle = await openInside(workspace, target, constants.O_RDONLY | constants.O_NONBLOCK);
      try {
        const stats = await handle.stat();
        if (stats.isDirectory()) throw new Error(`${shown} is a directory; use listFiles`);
        if (!stats.isFile()) throw new Error(`${shown} is not a regular file`);
        const size = stats.size;
        if (size === 0) return `[${shown}: empty file, 0 bytes]`;
        if (offset >= size) {
          return `[${shown}: offset ${offset} is at or past the end of the file (${size} bytes)]`;
        }
        // Up to 3 bytes may be skipped at the start (a character begun before `offset`) and up
        // to 3 read past the end (to finish a character the window cut): read 6 extra.
        const buffer = Buffer.alloc(Math.min(limit + 6, size - offset));
        const { bytesRead } = await handle.read(buffer, 0, buffer.length, offset);
        const window = buffer.subarray(0, bytesRead);
        if (window.includes(0)) {
          return `[${shown}: binary file, ${size} bytes; not shown]`;
        }
        const start = skipContinuationBytes(window, offset === 0 ? 0 : 3);
        const end = characterEnd(window, Math.min(start + limit, window.length));
        const from = offset + start;
        const to = offset + end;
        const position =
          to >= size ? 'end of file' : `${size - to} more bytes; continue with offset ${to}`;
        return `[${shown}: bytes ${from}-${to} of ${size}; ${position}]\n${window.subarray(start, end).toString('utf8')}`;
      } finally {
        await handle.close();
      }
    },
  });
}

/** Skips UTF-8 continuation bytes at the start of a window that began mid-character. */
function skipContinuationBytes(window: Buffer, most: number): number {
  let index = 0;
  while (index < most && index < window.length && ((window[index] ?? 0) & 0xc0) === 0x80)
    index += 1;
  return index;
}

/**
 * Where the window should end so it ends on a whole character: extends `wanted` over the
 * continuation bytes of a character it cut (up to 3, which were read ahead).
 */
function characterEnd(window: Buffer, wanted: number): number {
  let end = wanted;
  while (end < window.length && ((window[end] ?? 0) & 0xc0) === 0x80) end += 1;
  return end;
}
