import { InvalidArgumentError } from '../../runtime-errors.ts';
import type { McpToolsOptions, McpWatchableClient } from './mcp-client.ts';
import { type McpTool, mcpTools } from './mcp-tools.ts';

const listChanged = 'notifications/tools/list_changed';

/** Options of `watchMcpTools`: those of `mcpTools`, and what to call after each refresh. */
export interface WatchMcpToolsOptions extends McpToolsOptions {
  /** Called with the new set after each refresh the server asked for. */
  onChange?: (tools: Record<string, McpTool>) => void;
  /**
   * Called when a refresh failed (the previous set stays). Default: a process warning
   * (`process.emitWarning`), so a failure is never silent.
   */
  onError?: (error: unknown) => void;
}

/** A server's tool set that follows its `tools/list_changed` notifications. */
export interface McpToolWatch {
  /** The latest set: replaced by each refresh, never changed in place. */
  readonly tools: Record<string, McpTool>;
  /** Stops following the server (removes the notification handler); `tools` keeps the last set. */
  close(): void;
}

/**
 * `mcpTools`, kept current: on each `notifications/tools/list_changed` from the server the set
 * is listed again and replaces `tools`. Give the runtime a function that reads it, so each run
 * takes the set as it is when the run starts, and keeps it to its end (a change never reaches a
 * run in the middle). The watch takes over the client's handler for
 * `notifications/tools/list_changed` (the SDK keeps one per method): do not combine it with the
 * Client's own `listChanged.tools` option.
 *
 * @example
 * const files = await watchMcpTools(client, { prefix: 'fs_' });
 * const runtime = createRuntime({ model, tools: () => ({ ...files.tools, weather }) });
 */
export async function watchMcpTools(
  client: McpWatchableClient,
  options: WatchMcpToolsOptions = {},
): Promise<McpToolWatch> {
  for (const [name, value] of [
    ['options', options],
    ['options.onChange', options?.onChange],
    ['options.onError', options?.onError],
  ] as const) {
    const expected = name === 'options' ? 'object' : 'function';
    if (value === undefined && name !== 'options') continue;
    if (typeof value !== expected || value === null) {
      throw new InvalidArgumentError({
        message: `watchMcpTools: ${name} must be ${name === 'options' ? 'an object' : 'a function'} (got ${value === null ? 'null' : typeof value})`,
        argument: name,
      });
    }
  }
  const { onChange, onError = warn, ...listOptions } = options;
  let tools = await mcpTools(client, listOptions);
  // The SDK is a peer dependency: the caller has it, since it has a connected client.
  const { ToolListChangedNotificationSchema } = await import('@modelcontextprotocol/sdk/types.js');
  let closed = false;
  let refreshing = false;
  let again = false;

  async function refresh() {
    refreshing = true;
    do {
      again = false;
      try {
        const next = await mcpTools(client, listOptions);
        if (closed) break;
        tools = next;
        onChange?.(next);
      } catch (error) {
        if (!closed) onError(error);
      }
    } while (again && !closed);
    refreshing = false;
  }

  client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
    if (closed) return;
    // Notifications during a refresh fold into one more listing after it.
    if (refreshing) again = true;
    else void refresh();
  });
  return {
    get tools() {
      return tools;
    },
    close() {
      closed = true;
      client.removeNotificationHandler(listChanged);
    },
  };
}

function warn(error: unknown): void {
  process.emitWarning(
    `watchMcpTools: refreshing the MCP tools failed, the previous set stays: ${error instanceof Error ? error.message : String(error)}`,
    { type: 'TurnlogWarning' },
  );
}
