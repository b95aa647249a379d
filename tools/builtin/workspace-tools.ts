import type { Tool, ToolPermission } from '../tool.ts';
import { type ListFilesInput, type ListFilesOptions, listFilesTool } from './list-files.ts';
import { type ReadFileInput, type ReadFileOptions, readFileTool } from './read-file.ts';
import { type RunCommandInput, type RunCommandOptions, runCommandTool } from './run-command.ts';
import { openWorkspace } from './workspace-path.ts';
import { type WriteFileInput, writeFileTool } from './write-file.ts';

/** Options of `workspaceTools`. */
export interface WorkspaceToolsOptions {
  /** The directory every path argument must stay inside (realpath'd once). */
  root: string;
  /** Overrides of each tool's permission (defaults: read and list allow; write and run ask). */
  permissions?: {
    readFile?: ToolPermission<ReadFileInput>;
    writeFile?: ToolPermission<WriteFileInput>;
    listFiles?: ToolPermission<ListFilesInput>;
    runCommand?: ToolPermission<RunCommandInput>;
  };
  readFile?: Omit<ReadFileOptions, 'permission'>;
  listFiles?: Omit<ListFilesOptions, 'permission'>;
  runCommand?: Omit<RunCommandOptions, 'permission'>;
}

/**
 * The built-in tools for one workspace. A type literal, not an interface, so it is assignable
 * to `ToolSet` as it is.
 */
export type WorkspaceTools = {
  readFile: Tool<ReadFileInput, string>;
  writeFile: Tool<WriteFileInput, string>;
  listFiles: Tool<ListFilesInput, string>;
  runCommand: Tool<RunCommandInput, string>;
};

/**
 * The names of the built-in tools `workspaceTools` returns. `mcpTools` refuses a server tool
 * that would take one of them unless it is renamed to it explicitly.
 */
export const workspaceToolNames: ReadonlySet<string> = new Set([
  'readFile',
  'writeFile',
  'listFiles',
  'runCommand',
] satisfies (keyof WorkspaceTools)[]);

/**
 * The built-in tools, bound to one workspace root. A path argument that leaves the root (`..`,
 * an absolute path elsewhere, a symlink pointing out) fails validation, so the call settles
 * `invalid` before anything is touched; the file operations then go through folders held open
 * from the root (confined-files.ts), so a folder swapped for a symlink meanwhile is refused.
 * Throws `WorkspaceRootError` for a missing root.
 *
 * @example
 * const tools = {
 *   ...workspaceTools({ root: './sandbox', permissions: { writeFile: 'allow' } }),
 *   weather,
 * };
 */
export function workspaceTools(options: WorkspaceToolsOptions): WorkspaceTools {
  const workspace = openWorkspace(options.root);
  const permissions = options.permissions ?? {};
  return {
    readFile: readFileTool(workspace, { ...options.readFile, permission: permissions.readFile }),
    writeFile: writeFileTool(workspace, { permission: permissions.writeFile }),
    listFiles: listFilesTool(workspace, {
      ...options.listFiles,
      permission: permissions.listFiles,
    }),
    runCommand: runCommandTool(workspace, {
      ...options.runCommand,
      permission: permissions.runCommand,
    }),
  };
}
