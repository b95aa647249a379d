import { z } from 'zod';
import { defineTool } from '../define-tool.ts';
import type { Tool, ToolPermission } from '../tool.ts';
import { writeInside } from './confined-files.ts';
import { displayPath, type Workspace } from './workspace-path.ts';

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
 * target, so a reader never sees half a file (confined-files.ts `writeInside`).
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
    // The whole content replaces the file (temp file + rename): writing the same content to the
    // same path twice leaves what writing it once leaves.
    idempotent: true,
    execute: async ({ path: requested, content }) => {
      const target = workspace.resolveOrThrow(requested);
      const outcome = await writeInside(workspace, target, content);
      const bytes = Buffer.byteLength(content, 'utf8');
      return `Wrote ${bytes} bytes to ${displayPath(target.relative)} (${outcome}).`;
    },
  });
}
