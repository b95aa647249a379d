import { createHash } from 'node:crypto';
import { workspaceToolNames } from '../builtin/workspace-tools.ts';
import { reservedToolNames } from '../define-tool.ts';
import { ReservedToolNameError, ToolDefinitionError } from '../tool-errors.ts';

/** The longest tool name providers accept. */
const maxNameLength = 64;
/** Hex digits of the SHA-256 of the MCP name that end a shortened name. */
const hashDigits = 8;

/**
 * The turnlog tool name of an MCP tool: `prefix` + the MCP name with every character outside
 * `[a-zA-Z0-9_-]` replaced by `_` (`notes.archive` → `notes_archive`). A result longer than 64
 * characters keeps its first 55 and ends with `_` and the first 8 hex digits of the SHA-256 of
 * the MCP name, so a long name maps to the same short one every time.
 *
 * @example
 * mcpToolName({ prefix: 'fs_', name: 'read.file' }); // 'fs_read_file'
 */
export function mcpToolName({ prefix, name }: { prefix: string; name: string }): string {
  const mapped = `${prefix}${name.replace(/[^a-zA-Z0-9_-]/g, '_')}`;
  if (mapped.length <= maxNameLength) return mapped;
  const hash = createHash('sha256').update(name).digest('hex').slice(0, hashDigits);
  return `${mapped.slice(0, maxNameLength - hashDigits - 1)}_${hash}`;
}

/**
 * Maps each MCP name to its turnlog name: the one `rename` gives it, else `mcpToolName`. Throws
 * `ReservedToolNameError` for a name every object already has (`__proto__`, `constructor`: see
 * `reservedToolNames`), and `ToolDefinitionError` when a name the server chose is one of the
 * built-in workspace tools' (`readFile`: spread after `workspaceTools` it would replace the
 * built-in silently; only an explicit `rename` to it may take it) or when two MCP names map to
 * the same turnlog name (`a.b` and `a_b`): calling one for the other must never happen.
 */
export function assignToolNames({
  names,
  prefix,
  rename = {},
  server,
}: {
  names: readonly string[];
  prefix: string;
  /** Turnlog names by MCP name, chosen by the user; taken as they are. */
  rename?: Readonly<Record<string, string>>;
  server: string;
}): Map<string, string> {
  const assigned = new Map<string, string>();
  const owners = new Map<string, string>();
  for (const name of names) {
    const chosen = Object.hasOwn(rename, name);
    const toolName = chosen ? (rename[name] as string) : mcpToolName({ prefix, name });
    const tool = `The MCP tool ${JSON.stringify(name)} of server ${server}`;
    if (reservedToolNames.has(toolName)) {
      throw new ReservedToolNameError({
        message: `${tool} would be named ${JSON.stringify(toolName)}, a name every JavaScript object already has (a tool by it would be lost or become the prototype of the tool record); rename it (rename: { ${JSON.stringify(name)}: 'another_name' }), give the server a prefix, or leave it out with the include option`,
        toolName,
      });
    }
    if (!chosen && workspaceToolNames.has(toolName)) {
      throw new ToolDefinitionError({
        message: `${tool} would be named ${JSON.stringify(toolName)}, like turnlog's built-in workspace tool: spread after workspaceTools() it would replace the built-in silently, with the server's permissions. Give the server a prefix, rename it (rename: { ${JSON.stringify(name)}: 'docs_${toolName}' }), or, to replace the built-in on purpose, say so: rename: { ${JSON.stringify(name)}: ${JSON.stringify(toolName)} }`,
        toolName,
        field: 'name',
      });
    }
    const owner = owners.get(toolName);
    if (owner !== undefined) {
      throw new ToolDefinitionError({
        message: `The MCP tools ${JSON.stringify(owner)} and ${JSON.stringify(name)} of server ${server} both map to the tool name ${JSON.stringify(toolName)} (characters outside letters, digits, "_" and "-" become "_"; rename gives names as they are); take only one of them with the include option, or rename one`,
        toolName,
        field: 'name',
      });
    }
    owners.set(toolName, name);
    assigned.set(name, toolName);
  }
  return assigned;
}
