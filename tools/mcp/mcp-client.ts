import {
  isTurnlogErrorNamed,
  TurnlogError,
  type TurnlogErrorOptions,
} from '../../events/turnlog-error.ts';
import type { ToolPermission } from '../tool.ts';

/**
 * The MCP client contract turnlog uses: the methods of a connected `Client` from
 * `@modelcontextprotocol/sdk` (any transport). Declared here, structurally, so that turnlog's
 * types do not depend on the SDK, an optional peer dependency. No runtime logic.
 */

/** A tool as an MCP server lists it (`tools/list`). */
export interface McpToolInfo {
  name: string;
  title?: string | undefined;
  description?: string | undefined;
  /** The JSON Schema of the tool's arguments (`type: 'object'`). */
  inputSchema: { [key: string]: unknown };
  /**
   * How the tool runs with MCP tasks: `'required'` tools can only be called as a task
   * (`tasks/*`), which turnlog does not do, so `mcpTools` leaves them out.
   */
  execution?: { taskSupport?: 'required' | 'optional' | 'forbidden' | undefined } | undefined;
  /** Hints from the server, not guarantees (a server may say anything about its tools). */
  annotations?:
    | {
        title?: string | undefined;
        readOnlyHint?: boolean | undefined;
        destructiveHint?: boolean | undefined;
        idempotentHint?: boolean | undefined;
        openWorldHint?: boolean | undefined;
      }
    | undefined;
}

/** What `callTool` answers: content blocks, optional structured content, `isError`. */
export interface McpCallToolResult {
  content?: unknown;
  structuredContent?: unknown;
  isError?: unknown;
  /** The answer of servers on protocol version 2024-10-07. */
  toolResult?: unknown;
}

/** The methods of the SDK's `Client` that `mcpTools` and `watchMcpTools` call. */
export interface McpClient {
  listTools(
    params?: { cursor?: string },
    options?: { signal?: AbortSignal },
  ): Promise<{ tools: McpToolInfo[]; nextCursor?: string | undefined }>;
  callTool(
    params: { name: string; arguments?: { [key: string]: unknown } },
    resultSchema?: undefined,
    options?: { signal?: AbortSignal; timeout?: number },
  ): Promise<McpCallToolResult>;
  /** The server's name and version, from the initialization handshake. */
  getServerVersion(): { name: string; version: string } | undefined;
  /** The connection; `undefined` once it closed (the server exited, or `close()` was called). */
  readonly transport: unknown;
}

/** A client whose notifications `watchMcpTools` can follow (the SDK's `Client` is one). */
export interface McpWatchableClient extends McpClient {
  setNotificationHandler(
    schema: object,
    handler: (notification: unknown) => void | Promise<void>,
  ): void;
  removeNotificationHandler(method: string): void;
}

/** Options of `mcpTools` and `watchMcpTools`. */
export interface McpToolsOptions {
  /**
   * Which of the server's tools to take, by their MCP names (default: all). A name the server
   * does not list throws.
   */
  include?: readonly string[];
  /**
   * Put before every tool name (letters, digits, `_` and `-`), to keep two servers' tools apart:
   * `prefix: 'fs_'` turns `read_file` into `fs_read_file`.
   */
  prefix?: string;
  /**
   * Each tool's permission, keyed by its MCP name: a verdict or a function of the validated
   * input, as `defineTool` takes. Default: `'allow'` for a tool annotated `readOnlyHint: true`,
   * `'ask'` for every other (no annotations, `destructiveHint`, `openWorldHint`). A name the
   * server does not list throws.
   */
  permission?: Readonly<Record<string, ToolPermission<{ [key: string]: unknown }>>>;
  /** Milliseconds before a call is cancelled and settles `error` (default 120 000). */
  timeoutMs?: number;
  /**
   * Which of the server's hints make a tool idempotent (`Tool.idempotent`: a call that started
   * and never settled runs again after a restart, without asking anyone):
   * - `'readOnlyHint'` (default): a tool annotated `readOnlyHint: true`. Such a tool already runs
   *   without asking (its default permission is `allow`), so trusting the claim again adds no trust.
   * - `'readOnlyOrIdempotentHint'`: also a tool annotated `idempotentHint: true`. Only for
   *   servers you trust: the hint is the server's word, and a write wrongly called idempotent
   *   would take effect twice after a crash.
   * - `'none'`: no tool; every call that may have run waits for a person.
   */
  idempotentFrom?: 'readOnlyHint' | 'readOnlyOrIdempotentHint' | 'none';
  /**
   * Tool names chosen by you, keyed by MCP name, taken as they are (no `prefix`): to keep a tool
   * apart from another (`rename: { search: 'docs_search' }`), or to give a server's tool the
   * name of a built-in workspace tool on purpose (`rename: { readFile: 'readFile' }`; without
   * it such a tool is refused, since spread after `workspaceTools()` it would replace the
   * built-in silently). A name the server does not list throws.
   */
  rename?: Readonly<Record<string, string>>;
  /**
   * Called with each warning: the tools left out because they run only as MCP tasks
   * (`execution.taskSupport: 'required'`), named. Default: a process warning
   * (`process.emitWarning`, type `TurnlogWarning`).
   */
  onWarning?: (message: string) => void;
}

/**
 * `mcpTools` could not take a server's tools: the JSON Schema validator (ajv, a dependency of
 * the SDK) is not installed, or the server's `tools/list` answers never end.
 */
export class McpToolsError extends TurnlogError {
  static isInstance = isTurnlogErrorNamed<McpToolsError>('McpToolsError');
  /** The server's name from its handshake, when it is known. */
  readonly server: string | undefined;

  constructor(options: TurnlogErrorOptions & { server?: string }) {
    super(options);
    this.name = 'McpToolsError';
    this.server = options.server;
  }
}
