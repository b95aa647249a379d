import type { JsonObject } from '../../events/json.ts';
import { InvalidArgumentError } from '../../runtime-errors.ts';
import { defineTool } from '../define-tool.ts';
import type { Tool, ToolPermission } from '../tool.ts';
import { ToolDefinitionError } from '../tool-errors.ts';
import { errorMessage } from '../tool-output.ts';
import {
  type JsonSchemaCompiler,
  jsonSchemaInput,
  loadJsonSchemaCompiler,
} from './json-schema-input.ts';
import {
  type McpClient,
  type McpToolInfo,
  McpToolsError,
  type McpToolsOptions,
} from './mcp-client.ts';
import { mcpResultText } from './mcp-result-text.ts';
import { assignToolNames } from './mcp-tool-names.ts';

/** An MCP tool as a turnlog tool: its input is the validated JSON arguments, its output the text. */
export type McpTool = Tool<JsonObject, string | undefined>;

const defaultTimeoutMs = 120_000;
const maxTimeoutMs = 2_147_483_647;
/** JSON-RPC error code the SDK rejects pending requests with when the connection closes. */
const connectionClosed = -32000;

/**
 * The tools of a connected MCP server as turnlog tools, for `createRuntime({ tools })` beside
 * `defineTool` tools. Each call goes through turnlog like any other: the server's JSON Schema
 * validates the input before anything runs (an input that does not validate settles `invalid`
 * and never reaches the server), the permission judges the validated value (by default `allow`
 * for tools annotated `readOnlyHint: true`, `ask` for the rest), `tool.started` is durable
 * before `tools/call` is sent, and the stop signal or the timeout cancel the request
 * (`notifications/cancelled`). A result with `isError` settles `error`; content becomes text.
 *
 * Throws `ToolDefinitionError` when two MCP names map to one tool name or a tool's schema cannot
 * validate, `InvalidArgumentError` for bad options, and `McpToolsError` when ajv is missing or
 * the listing never ends. The set is read once: for a server whose tools change, see
 * `watchMcpTools`.
 *
 * @example
 * const client = new Client({ name: 'my-agent', version: '1.0.0' });
 * await client.connect(new StdioClientTransport({ command: 'npx', args: ['-y', '@modelcontextprotocol/server-filesystem', dir] }));
 * const runtime = createRuntime({ model, tools: { ...(await mcpTools(client, { prefix: 'fs_' })), weather } });
 */
export async function mcpTools(
  client: McpClient,
  options: McpToolsOptions = {},
): Promise<Record<string, McpTool>> {
  const { prefix, timeoutMs, onWarning, idempotentFrom } = checkOptions(client, options);
  const compile = await loadJsonSchemaCompiler();
  const listed = await listAllTools(client);
  const server = serverLabel(client);
  const chosen = chooseTools({ listed, options, server, onWarning });
  const names = assignToolNames({
    names: chosen.map((tool) => tool.name),
    prefix,
    rename: options.rename ?? {},
    server,
  });
  const tools: Record<string, McpTool> = {};
  for (const info of chosen) {
    const toolName = names.get(info.name) as string;
    tools[toolName] = mcpTool({
      client,
      info,
      toolName,
      server,
      compile,
      timeoutMs,
      idempotent: isIdempotent(info, idempotentFrom),
      permission: Object.hasOwn(options.permission ?? {}, info.name)
        ? options.permission?.[info.name]
        : undefined,
    });
  }
  return tools;
}

/**
 * The listed tools to take: those `include` names (all by default), less the ones that run only
 * as MCP tasks, which turnlog does not run: left out with a warning naming them, or refused when
 * `include` asks for one. Options naming a tool the server does not list throw.
 */
function chooseTools({
  listed,
  options,
  server,
  onWarning,
}: {
  listed: McpToolInfo[];
  options: McpToolsOptions;
  server: string;
  onWarning: (message: string) => void;
}): McpToolInfo[] {
  const known = new Set(listed.map((tool) => tool.name));
  for (const [option, names] of [
    ['include', options.include ?? []],
    ['permission', Object.keys(options.permission ?? {})],
    ['rename', Object.keys(options.rename ?? {})],
  ] as const) {
    const unknown = names.filter((name) => !known.has(name));
    if (unknown.length > 0) {
      throw new InvalidArgumentError({
        message: `mcpTools: options.${option} names ${quoteAll(unknown)}, which server ${server} does not list; its tools are: ${[...known].join(', ')}`,
        argument: `options.${option}`,
      });
    }
  }
  const include = options.include === undefined ? undefined : new Set(options.include);
  const wanted = listed.filter((tool) => include === undefined || include.has(tool.name));
  const taskOnly = wanted.filter((tool) => tool.execution?.taskSupport === 'required');
  if (taskOnly.length === 0) return wanted;
  const names = quoteAll(taskOnly.map((tool) => tool.name));
  if (include !== undefined) {
    throw new InvalidArgumentError({
      message: `mcpTools: options.include names ${names} of server ${server}, which run only as MCP tasks (execution.taskSupport: 'required'); turnlog does not run MCP tasks, so leave them out`,
      argument: 'options.include',
    });
  }
  onWarning(
    `mcpTools: server ${server} lists tools that run only as MCP tasks (execution.taskSupport: 'required'), which turnlog does not run; left out: ${names}`,
  );
  return wanted.filter((tool) => tool.execution?.taskSupport !== 'required');
}

const quoteAll = (names: readonly string[]) => names.map((name) => JSON.stringify(name)).join(', ');

function mcpTool({
  client,
  info,
  toolName,
  server,
  compile,
  timeoutMs,
  idempotent,
  permission,
}: {
  client: McpClient;
  info: McpToolInfo;
  toolName: string;
  server: string;
  compile: JsonSchemaCompiler;
  timeoutMs: number;
  idempotent: boolean;
  permission: ToolPermission<JsonObject> | undefined;
}): McpTool {
  let inputSchema: ReturnType<typeof jsonSchemaInput>;
  try {
    inputSchema = jsonSchemaInput({
      schema: JSON.parse(JSON.stringify(info.inputSchema)) as JsonObject,
      compile,
    });
  } catch (error) {
    throw new ToolDefinitionError({
      message: `The input schema of MCP tool ${JSON.stringify(info.name)} of server ${server} cannot validate its calls (${errorMessage(error)}); leave the tool out with the include option`,
      toolName,
      field: 'inputSchema',
      cause: error,
    });
  }
  const description = [info.description, info.title, info.annotations?.title].find(
    (text) => typeof text === 'string' && text.trim() !== '',
  );
  return defineTool({
    description: description ?? `The tool ${info.name} of the MCP server ${server}.`,
    inputSchema,
    // Annotations are hints from the server: only an explicit read-only claim skips the ask.
    permission: permission ?? (info.annotations?.readOnlyHint === true ? 'allow' : 'ask'),
    timeoutMs,
    idempotent,
    execute: async (input, { signal }) => {
      if (client.transport === undefined) {
        throw new Error(
          `the MCP server ${server} is not connected (it exited, or its client was closed), so the call was not sent; calls to it fail until the client connects again`,
        );
      }
      let result: Awaited<ReturnType<McpClient['callTool']>>;
      try {
        result = await client.callTool({ name: info.name, arguments: input }, undefined, {
          signal,
          // The tool runtime's own timeout (timeoutMs) cancels first; the SDK's default (60 s)
          // must not cut a longer one short.
          timeout: Math.min(timeoutMs + 1_000, maxTimeoutMs),
        });
      } catch (error) {
        if (signal.aborted) {
          throw new Error(
            `the request was cancelled (the server was sent notifications/cancelled)`,
            { cause: error },
          );
        }
        if ((error as { code?: unknown } | null)?.code === connectionClosed) {
          throw new Error(
            `the connection to the MCP server ${server} closed during the call (the server exited or its transport failed); the call may have partly run, inspect the state before retrying`,
            { cause: error },
          );
        }
        throw error;
      }
      const text = mcpResultText(result);
      if (result.isError === true) {
        throw new Error(text ?? 'the server reported an error without a message');
      }
      return text;
    },
  });
}

/** Every tool the server lists, following `nextCursor` through the pages. */
async function listAllTools(client: McpClient): Promise<McpToolInfo[]> {
  const tools: McpToolInfo[] = [];
  const cursors = new Set<string>();
  let cursor: string | undefined;
  do {
    const page = await client.listTools(cursor === undefined ? undefined : { cursor });
    tools.push(...page.tools);
    cursor = page.nextCursor;
    if (cursor !== undefined && cursors.has(cursor)) {
      throw new McpToolsError({
        message: `mcpTools: server ${serverLabel(client)} sent the tools/list cursor ${JSON.stringify(cursor)} twice, so its listing never ends; fix the server, or report it to its authors`,
        server: client.getServerVersion()?.name,
      });
    }
    if (cursor !== undefined) cursors.add(cursor);
  } while (cursor !== undefined);
  return tools;
}

/** The server's name for messages: `"turnlog-test"`, from the initialization handshake. */
export function serverLabel(client: McpClient): string {
  return JSON.stringify(client.getServerVersion()?.name ?? 'unnamed');
}

function checkOptions(client: McpClient, options: McpToolsOptions) {
  const bad = (argument: string, problem: string): never => {
    throw new InvalidArgumentError({ message: `mcpTools: ${argument} ${problem}`, argument });
  };
  if (
    typeof client !== 'object' ||
    client === null ||
    typeof client.listTools !== 'function' ||
    typeof client.callTool !== 'function'
  ) {
    bad('client', 'is not an MCP client; pass a connected Client from @modelcontextprotocol/sdk');
  }
  if (typeof options !== 'object' || options === null) bad('options', 'must be an object');
  const {
    prefix = '',
    timeoutMs = defaultTimeoutMs,
    include,
    permission,
    rename,
    onWarning = warn,
    idempotentFrom = 'readOnlyHint',
  } = options;
  if (!['readOnlyHint', 'readOnlyOrIdempotentHint', 'none'].includes(idempotentFrom)) {
    bad(
      'options.idempotentFrom',
      `is ${JSON.stringify(idempotentFrom)}; use 'readOnlyHint', 'readOnlyOrIdempotentHint' or 'none'`,
    );
  }
  if (typeof prefix !== 'string' || !/^[a-zA-Z0-9_-]{0,32}$/.test(prefix)) {
    bad('options.prefix', `is ${JSON.stringify(prefix)}; use up to 32 letters, digits, "_" or "-"`);
  }
  if (!Number.isInteger(timeoutMs) || timeoutMs <= 0 || timeoutMs > maxTimeoutMs) {
    bad(
      'options.timeoutMs',
      `is ${JSON.stringify(timeoutMs)}; use a whole number of milliseconds from 1 to ${maxTimeoutMs}`,
    );
  }
  if (
    include !== undefined &&
    (!Array.isArray(include) || include.some((name) => typeof name !== 'string'))
  ) {
    bad('options.include', 'must be an array of MCP tool names');
  }
  if (permission !== undefined && (typeof permission !== 'object' || permission === null)) {
    bad(
      'options.permission',
      "must be an object of permissions by MCP tool name, e.g. { write_file: 'ask' }",
    );
  }
  if (
    rename !== undefined &&
    (typeof rename !== 'object' ||
      rename === null ||
      Object.values(rename).some((name) => typeof name !== 'string' || !toolName.test(name)))
  ) {
    bad(
      'options.rename',
      'must be an object of tool names by MCP tool name, each 1 to 64 letters, digits, "_" or "-", e.g. { search: \'docs_search\' }',
    );
  }
  if (typeof onWarning !== 'function') bad('options.onWarning', 'must be a function');
  return { prefix, timeoutMs, onWarning, idempotentFrom };
}

/** Whether the server's hints make the tool idempotent, as far as `idempotentFrom` trusts them. */
function isIdempotent(
  info: McpToolInfo,
  idempotentFrom: NonNullable<McpToolsOptions['idempotentFrom']>,
): boolean {
  const hints = info.annotations;
  if (idempotentFrom === 'none') return false;
  if (hints?.readOnlyHint === true) return true;
  return idempotentFrom === 'readOnlyOrIdempotentHint' && hints?.idempotentHint === true;
}

const toolName = /^[a-zA-Z0-9_-]{1,64}$/;

function warn(message: string): void {
  process.emitWarning(message, { type: 'TurnlogWarning' });
}
