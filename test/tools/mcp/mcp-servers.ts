import { mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  getDefaultEnvironment,
  StdioClientTransport,
} from '@modelcontextprotocol/sdk/client/stdio.js';
import { onTestFinished } from 'vitest';

export const testServerFile = fileURLToPath(new URL('./test-server.ts', import.meta.url));
export const filesystemServerFile = fileURLToPath(
  new URL(
    '../../../node_modules/@modelcontextprotocol/server-filesystem/dist/index.js',
    import.meta.url,
  ),
);

/**
 * One line of the test server's side file: a message it received (`received`: `tools/call` with
 * `name` and `arguments`, or `notifications/cancelled` with `reason`), or what a handler saw.
 */
export interface ServerRecord {
  received?: 'tools/call' | 'notifications/cancelled';
  handler?: string;
  event?: string;
  name?: string;
  arguments?: Record<string, unknown>;
  reason?: string;
  [key: string]: unknown;
}

/** A temp directory (realpath'd) removed when the current test finishes. */
export function tempDir(prefix = 'turnlog-mcp-'): string {
  const dir = realpathSync(mkdtempSync(path.join(tmpdir(), prefix)));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** What the test server wrote to its side file so far. */
export function readRecords(sideFile: string): ServerRecord[] {
  let text: string;
  try {
    text = readFileSync(sideFile, 'utf8');
  } catch {
    return [];
  }
  return text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as ServerRecord);
}

/**
 * Node's on-disk compile cache for the server processes: it cuts their start-up by about a third
 * and changes no behaviour (Node checks every entry against the source it compiles).
 */
export const compileCache = path.join(tmpdir(), 'turnlog-mcp-compile-cache');

/** Connects a new SDK client over stdio to a child process, closed when the test finishes. */
export async function connectStdio(args: string[]): Promise<Client> {
  const client = new Client({ name: 'turnlog-tests', version: '1.0.0' });
  const env = { ...getDefaultEnvironment(), NODE_COMPILE_CACHE: compileCache };
  await client.connect(
    new StdioClientTransport({ command: process.execPath, args, env, stderr: 'pipe' }),
  );
  onTestFinished(() => client.close());
  return client;
}

/** The project's MCP test server in a child process, and its side file. */
export async function startTestServer() {
  const sideFile = path.join(tempDir(), 'server.jsonl');
  const client = await connectStdio([testServerFile, sideFile]);
  return { client, sideFile, records: () => readRecords(sideFile) };
}

/** The published filesystem server over `root`. */
export function startFilesystemServer(root: string): Promise<Client> {
  return connectStdio([filesystemServerFile, root]);
}
