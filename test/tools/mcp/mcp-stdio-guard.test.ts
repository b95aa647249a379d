import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { describe, expect, it, onTestFinished } from 'vitest';
import { InvalidArgumentError } from '../../../runtime-errors.ts';
import { mcpStdioServer } from '../../../tools/mcp/mcp-stdio-server.ts';
import { mcpTools } from '../../../tools/mcp/mcp-tools.ts';
import { runTurn, settlements, waitForRecord } from './mcp-run.ts';
import { compileCache, tempDir, testServerFile } from './mcp-servers.ts';

const agentFile = fileURLToPath(new URL('./stdio-agent-child.ts', import.meta.url));
const lingeringFile = fileURLToPath(new URL('./lingering-server.ts', import.meta.url));
const env = { ...process.env, NODE_COMPILE_CACHE: compileCache };

/** True while `pid` runs (a zombie waiting for its parent counts as gone). Linux `/proc`. */
function isRunning(pid: number): boolean {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return false;
  }
  const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  return state !== 'Z' && state !== 'X';
}

/** Resolves once none of `pids` runs; rejects, naming them, after `withinMs`. */
async function untilGone(pids: number[], withinMs = 30_000): Promise<void> {
  const deadline = Date.now() + withinMs;
  while (pids.some(isRunning)) {
    if (Date.now() > deadline) {
      throw new Error(`still running after ${withinMs} ms: ${pids.filter(isRunning).join(', ')}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** The lingering server's pids from its side file; both are killed when the test finishes. */
function lingeringPids(sideFile: string): number[] {
  const { server, helper } = JSON.parse(readFileSync(sideFile, 'utf8')) as Record<string, number>;
  const pids = [server as number, helper as number];
  onTestFinished(() => {
    for (const pid of pids.filter(isRunning)) process.kill(pid, 'SIGKILL');
  });
  return pids;
}

/** Starts the agent child; resolves once it printed `ready`, with the child. */
async function startAgent(end: 'exit' | 'kill', sideFile: string) {
  const child = spawn(process.execPath, [agentFile, 'guarded', end, sideFile], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env,
  });
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  let stdout = '';
  await new Promise<void>((resolve, reject) => {
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
      if (stdout.includes('ready\n')) resolve();
    });
    void exited.then(() => reject(new Error(`the agent ended before it was ready: ${stdout}`)));
  });
  return { child, exited };
}

describe('mcpStdioServer: no stdio server outlives its agent', () => {
  it('ends the server and the process it started when the agent is SIGKILLed', async () => {
    const sideFile = path.join(tempDir(), 'pids.json');
    const { child, exited } = await startAgent('kill', sideFile);
    const pids = lingeringPids(sideFile);
    expect(pids.every(isRunning)).toBe(true);
    child.kill('SIGKILL');
    expect(await exited).toEqual({ code: null, signal: 'SIGKILL' });
    await untilGone(pids);
  });

  it('ends them when the agent exits without closing its client', async () => {
    const sideFile = path.join(tempDir(), 'pids.json');
    const { exited } = await startAgent('exit', sideFile);
    const pids = lingeringPids(sideFile);
    expect(await exited).toEqual({ code: 0, signal: null });
    await untilGone(pids);
  });

  it("ends them on the SDK's client.close(), which resolves once they are gone", async () => {
    const sideFile = path.join(tempDir(), 'pids.json');
    const client = new Client({ name: 'turnlog-tests', version: '1.0.0' });
    await client.connect(
      new StdioClientTransport({
        ...mcpStdioServer({ command: process.execPath, args: [lingeringFile, sideFile] }),
        env,
      }),
    );
    expect(await client.callTool({ name: 'ping' })).toEqual({
      content: [{ type: 'text', text: 'pong' }],
    });
    const pids = lingeringPids(sideFile);
    await client.close();
    await untilGone(pids);
  });

  it('passes calls, results and a server that exits mid-call through unchanged', async () => {
    const dir = tempDir();
    const sideFile = path.join(dir, 'server.jsonl');
    const client = new Client({ name: 'turnlog-tests', version: '1.0.0' });
    await client.connect(
      new StdioClientTransport({
        ...mcpStdioServer({ command: process.execPath, args: [testServerFile, sideFile] }),
        env,
        stderr: 'pipe',
      }),
    );
    onTestFinished(() => client.close());
    const { facts } = await runTurn({
      tools: await mcpTools(client),
      script: [
        { toolCalls: [{ name: 'read_note', input: { name: 'todo' } }] },
        { toolCalls: [{ name: 'exit' }] },
        { text: 'ok' },
      ],
    });
    await waitForRecord(sideFile, (record) => record.handler === 'exit');
    expect(settlements(facts)).toEqual([
      ['read_note', 'success', 'buy milk'],
      [
        'exit',
        'error',
        'The tool failed: the connection to the MCP server "turnlog-test" closed during the call (the server exited or its transport failed); the call may have partly run, inspect the state before retrying',
      ],
    ]);
  });

  it('keeps the other parameters and refuses a server without a command', () => {
    const guarded = mcpStdioServer({ command: 'npx', args: ['-y', 'server'], cwd: '/tmp' });
    expect(guarded).toEqual({
      command: process.execPath,
      args: [expect.stringMatching(/stdio-guard\.ts$/), 'npx', '-y', 'server'],
      cwd: '/tmp',
    });
    expect(() => mcpStdioServer({ command: '' })).toThrow(
      "mcpStdioServer: pass the server's { command, args }, a program and an array of strings, e.g. { command: 'npx', args: ['-y', '@modelcontextprotocol/server-filesystem', dir] }",
    );
    expect(() => mcpStdioServer(undefined as never)).toSatisfy(() => {
      try {
        mcpStdioServer(undefined as never);
        return false;
      } catch (error) {
        return InvalidArgumentError.isInstance(error);
      }
    });
  });
});
