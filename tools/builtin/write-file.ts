import { randomBytes } from 'node:crypto';
import { mkdir, open, rename, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { defineTool } from '../define-tool.ts';
import type { Tool, ToolPermission } from '../tool.ts';
import type { Workspace } from './workspace-path.ts';

/** The validated input of `writeFile`. */
export interface WriteFileInput {
  /** Relative to the workspace root (checked). */
  path: string;
  content: string;
}

/** Options of the `writeFile` tool. */
export interface WriteFileOptions {
  /** Default `'ask'`: a person approves each write. */
  permission?: ToolPermission<WriteFileInput>;
}

/**
 * `writeFile`: writes a whole text file inside the workspace, creating parent directories.
 * The content goes to a temporary file next to the target, is flushed, then renamed over the
 * target, so a reader never sees half a file.
 */
export function writeFileTool(
  workspace: Workspace,
  options: WriteFileOptions = {},
): Tool<WriteFileInput, string> {
  return defineTool({
    description:
      'Write a text file in the workspace, replacing it if it exists and creating missing parent directories.',
    inputSchema: z.object({
      path: workspace.pathSchema('File path relative to the workspace root'),
      content: z.string().describe('The complete new content of the file'),
    }),
    permission: options.permission ?? 'ask',
    execute: async ({ path: requested, content }) => {
      const target = workspace.resolveOrThrow(requested);
      if (target.relative === '.') throw new Error('the workspace root is a directory, not a file');
      const existing = target.exists ? await stat(target.absolute) : undefined;
      if (existing?.isDirectory()) throw new Error(`${target.relative} is a directory`);
      const directory = path.dirname(target.absolute);
      await mkdir(directory, { recursive: true });
      // Check again: creating directories must not have let the path out of the root.
      const checked = workspace.resolveOrThrow(target.relative);
      const temporary = path.join(
        directory,
        `.${path.basename(checked.absolute)}.${randomBytes(6).toString('hex')}.tmp`,
      );
      // 'wx' creates a new file and never follows an existing name (or symlink).
      const handle = await open(temporary, 'wx', 0o644);
      try {
        try {
          if (existing !== undefined) await handle.chmod(existing.mode & 0o7777);
          await handle.writeFile(content, 'utf8');
          await handle.sync();
        } finally {
          await handle.close();
        }
        await rename(temporary, checked.absolute);
      } catch (error) {
        await unlink(temporary).catch(() => {});
        throw error;
      }
      const bytes = Buffer.byteLength(content, 'utf8');
      return `Wrote ${bytes} bytes to ${checked.relative} (${existing === undefined ? 'created' : 'replaced'}).`;
    },
  });
}
