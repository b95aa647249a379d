import { fileURLToPath } from 'node:url';
import { InvalidArgumentError } from '../../runtime-errors.ts';

/** The parameters of the SDK's `StdioClientTransport` that `mcpStdioServer` reads and changes. */
export interface McpStdioServerParameters {
  /** The server's program: `npx`, `node`, `uvx`, a path. */
  command: string;
  args?: string[];
}

/** The guard program beside this module: `.ts` when turnlog runs from its sources. */
const guardFile = fileURLToPath(
  new URL(
    import.meta.url.endsWith('.ts') ? './stdio-guard.ts' : './stdio-guard.js',
    import.meta.url,
  ),
);

/**
 * The parameters of an MCP stdio server, changed so that the server ends with the agent, however
 * the agent ends: `command` runs under turnlog's stdio guard (a small Node process), which starts
 * it in a process group of its own and, when its stdin ends — the agent closed the client,
 * exited, or was killed, SIGKILL included — ends the server's stdin, then terminates the whole
 * group (SIGTERM, then SIGKILL a second later) if the server is still there: a server started
 * through `npx` and the processes it started go with it. Without the guard, a server that does
 * not exit when its stdin ends outlives an agent that did not call `client.close()`.
 *
 * Every other parameter (`env`, `cwd`, `stderr`) is kept. The transport's `pid` is then the
 * guard's. Cannot be cleaned up: the guard itself killed with SIGKILL at the same time as the
 * agent (`kill -9` of the agent's whole process group), and a server that leaves its process
 * group (`setsid`, daemonizing). On Windows, where there are no process groups, the parameters
 * are returned unchanged.
 *
 * @example
 * const client = new Client({ name: 'my-agent', version: '1.0.0' });
 * await client.connect(
 *   new StdioClientTransport(
 *     mcpStdioServer({ command: 'npx', args: ['-y', '@modelcontextprotocol/server-filesystem', dir] }),
 *   ),
 * );
 */
export function mcpStdioServer<TParameters extends McpStdioServerParameters>(
  server: TParameters,
): TParameters & { args: string[] } {
  const args = server?.args ?? [];
  if (
    typeof server !== 'object' ||
    server === null ||
    typeof server.command !== 'string' ||
    server.command === '' ||
    !Array.isArray(args) ||
    args.some((arg) => typeof arg !== 'string')
  ) {
    throw new InvalidArgumentError({
      message:
        "mcpStdioServer: pass the server's { command, args }, a program and an array of strings, e.g. { command: 'npx', args: ['-y', '@modelcontextprotocol/server-filesystem', dir] }",
      argument: 'server',
    });
  }
  if (process.platform === 'win32') return { ...server, args };
  return { ...server, command: process.execPath, args: [guardFile, server.command, ...args] };
}
