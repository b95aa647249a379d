import type { Dirent } from 'node:fs';
import { z } from 'zod';
import { defineTool } from '../define-tool.ts';
import type { Tool, ToolPermission } from '../tool.ts';
import { listInside } from './confined-files.ts';
import { displayPath, type Workspace } from './workspace-path.ts';

/** Directory names never listed or entered. */
export const skippedDirectories: ReadonlySet<string> = new Set(['node_modules', '.git']);

/** The validated input of `listFiles`. */
export interface ListFilesInput {
  /** Relative to the workspace root (checked). */
  path: string;
  recursive: boolean;
  maxEntries: number;
}

/** Options of the `listFiles` tool. */
export interface ListFilesOptions {
  /** Default `'allow'`. */
  permission?: ToolPermission<ListFilesInput>;
  /** Entries listed when the model gives no `maxEntries` (default 200). */
  defaultEntries?: number;
  /** The largest `maxEntries` the model may ask for (default 2000). */
  maxEntries?: number;
}

/**
 * `listFiles`: lists a directory inside the workspace, optionally recursively, one entry a
 * line relative to the root (`dir/` for directories, `name@` for symlinks, which are never
 * followed), sorted, bounded, without `node_modules` and `.git`. A path that could be misread
 * (a newline in a name, say) is shown as a JSON string (`displayPath`), so each entry is one
 * line. Every folder is read through confined-files.ts `listInside`.
 */
export function listFilesTool(
  workspace: Workspace,
  options: ListFilesOptions = {},
): Tool<ListFilesInput, string> {
  const maxEntries = options.maxEntries ?? 2_000;
  const defaultEntries = Math.min(options.defaultEntries ?? 200, maxEntries);
  return defineTool({
    description: `List the files of a directory in the workspace (node_modules and .git are skipped), one a line: "dir/" for a directory, "name@" for a symlink. A path with a control character, a leading or trailing space, a leading quote or a trailing @ is shown as a JSON string ("a\\nb.txt"). Set recursive to include subdirectories; at most ${defaultEntries} entries unless maxEntries says otherwise (up to ${maxEntries}).`,
    inputSchema: z.object({
      path: workspace.pathSchema('Directory relative to the workspace root').default('.'),
      recursive: z.boolean().default(false).describe('Include subdirectories'),
      maxEntries: z
        .number()
        .int()
        .min(1)
        .max(maxEntries)
        .default(defaultEntries)
        .describe('Most entries to list'),
    }),
    permission: options.permission ?? 'allow',
    // Reads only: running it again after a restart changes nothing.
    idempotent: true,
    execute: async ({ path: requested, recursive, maxEntries: cap }) => {
      const target = workspace.resolveOrThrow(requested);
      const shown = displayPath(target.relative);
      if (!target.exists) throw new Error(`${shown} does not exist`);
      const lines: string[] = [];
      let complete = true;
      // Depth first, sorted: a pending stack of directories (relative to the root) to read.
      const stack: string[] = [target.relative];
      while (stack.length > 0 && complete) {
        const directory = stack.pop() as string;
        let entries: Dirent[];
        try {
          entries = await listInside(workspace, directory);
        } catch (error) {
          const code = (error as NodeJS.ErrnoException).code;
          if (directory === target.relative) {
            throw code === 'ENOTDIR'
              ? new Error(`${shown} is not a directory; use readFile`)
              : error;
          }
          const why =
            code === undefined
              ? 'refused: it was moved or replaced while being listed'
              : `unreadable: ${code}`;
          lines.push(`${displayPath(directory)}/ (${why})`);
          continue;
        }
        entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
        const subdirectories: string[] = [];
        for (const entry of entries) {
          if (skippedDirectories.has(entry.name)) continue;
          if (lines.length >= cap) {
            complete = false;
            break;
          }
          const relative = directory === '.' ? entry.name : `${directory}/${entry.name}`;
          if (entry.isSymbolicLink()) lines.push(`${displayPath(relative)}@`);
          else if (entry.isDirectory()) {
            lines.push(`${displayPath(relative)}/`);
            if (recursive) subdirectories.push(relative);
          } else lines.push(displayPath(relative));
        }
        stack.push(...subdirectories.reverse());
      }
      const header = complete
        ? `[${shown}: ${lines.length} ${lines.length === 1 ? 'entry' : 'entries'}]`
        : `[${shown}: stopped after ${cap} entries; list a subdirectory${cap < maxEntries ? ` or raise maxEntries (up to ${maxEntries})` : ''} to see more]`;
      return lines.length === 0 ? `${header}\n(empty)` : `${header}\n${lines.join('\n')}`;
    },
  });
}
