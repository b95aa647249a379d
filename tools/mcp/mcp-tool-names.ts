import { createHash } from 'node:crypto';
import { ToolDefinitionError } from '../tool-errors.ts';

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
 * Maps each MCP name to its turnlog name; throws `ToolDefinitionError` when two MCP names map to
 * the same turnlog name (`a.b` and `a_b`): calling one for the other must never happen.
 */
export function assignToolNames({
  names,
  prefix,
  server,
}: {
  names: readonly string[];
  prefix: string;
  server: string;
}): Map<string, string> {
  const assigned = new Map<string, string>();
  const owners = new Map<string, string>();
  for (const name of names) {
    const toolName = mcpToolName({ prefix, name });
    const owner = owners.get(toolName);
    if (owner !== undefined) {
      throw new ToolDefinitionError({
        message: `The MCP tools ${JSON.stringify(owner)} and ${JSON.stringify(name)} of server ${server} both map to the tool name ${JSON.stringify(toolName)} (characters outside letters, digits, "_" and "-" become "_"); take only one of them with the include option`,
        toolName,
        field: 'name',
      });
    }
    owners.set(toolName, name);
    assigned.set(name, toolName);
  }
  return assigned;
}
