import { spawn } from 'node:child_process';
import { stat } from 'node:fs/promises';
import { z } from 'zod';
import { defineTool } from '../define-tool.ts';
import type { Tool, ToolPermission } from '../tool.ts';
import { minRedactedLength } from '../tool-output.ts';
import type { Workspace } from './workspace-path.ts';

/** The validated input of `runCommand`. */
export interface RunCommandInput {
  command: string;
  args: string[];
  /** Working directory relative to the workspace root (checked). */
  cwd: string;
}

/** Options of the `runCommand` tool. */
export interface RunCommandOptions {
  /** Default `'ask'`: a person approves each command. */
  permission?: ToolPermission<RunCommandInput>;
  /** Milliseconds before the command's process group is killed (default 60 000). */
  timeoutMs?: number;
  /** Bytes of stdout + stderr kept, head and tail (default 30 000). */
  outputBytes?: number;
  /** `PATH` of the command (default: this process's `PATH`). */
  path?: string;
  /**
   * Extra environment variables, passed explicitly. Nothing else is inherited: the command
   * sees only `PATH`, `HOME` (the workspace root), `LANG` and these. Values of 8 or more
   * characters are redacted from the command's output and errors like a tool's secrets (a
   * token the command prints never reaches the log or the model); shorter ones (`CI: '1'`) are
   * left, as redacting them would garble the output.
   */
  env?: Record<string, string>;
}

/**
 * `runCommand`: runs one program with arguments (no shell) in the workspace, with a timeout
 * that kills its whole process group, a minimal environment and a bounded output. A non-zero
 * exit code is a result for the model, not a tool failure.
 */
export function runCommandTool(
  workspace: Workspace,
  options: RunCommandOptions = {},
): Tool<RunCommandInput, string> {
  const timeoutMs = options.timeoutMs ?? 60_000;
  const outputBytes = options.outputBytes ?? 30_000;
  const env: Record<string, string> = {
    PATH: options.path ?? process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
    HOME: workspace.root,
    LANG: process.env.LANG ?? 'C.UTF-8',
    ...options.env,
  };
  return defineTool({
    description: `Run a program in the workspace without a shell: \`command\` is the program, \`args\` its arguments (no globbing, pipes or redirection). Killed after ${timeoutMs} ms. Returns the exit code and the combined stdout and stderr.`,
    inputSchema: z.object({
      command: z.string().min(1).describe('Program to run, e.g. "npm" or "./build.sh"'),
      args: z.array(z.string()).default([]).describe('Arguments, one per element'),
      cwd: workspace.pathSchema('Working directory relative to the workspace root').default('.'),
    }),
    permission: options.permission ?? 'ask',
    // Neither idempotent nor able to tell whether it ran: a program's effects are its own, so
    // a call that may have run waits for a person after a restart.
    secrets: () =>
      Object.values(options.env ?? {}).filter((value) => value.length >= minRedactedLength),
    // The runtime's timeout is a backstop; the command's own timeout reports its output.
    timeoutMs: timeoutMs + 10_000,
    execute: async ({ command, args, cwd }, { signal }) => {
      const directory = workspace.resolveOrThrow(cwd);
      if (!directory.exists || !(await stat(directory.absolute)).isDirectory()) {
        throw new Error(`the working directory ${directory.relative} is not a directory`);
      }
      const result = await runProcess({
        command,
        args,
        cwd: directory.absolute,
        env,
        timeoutMs,
        outputBytes,
        signal,
      });
      if (result.stopped) {
        throw new Error('the command was killed because the run was stopped');
      }
      const status = result.timedOut
        ? `[killed after the ${timeoutMs} ms timeout]`
        : result.signal !== null
          ? `[terminated by signal ${result.signal}]`
          : `[exit code ${result.exitCode}]`;
      return `$ ${[command, ...args].map(quote).join(' ')}\n${status}\n${result.output === '' ? '(no output)' : result.output}`;
    },
  });
}

interface ProcessResult {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  stopped: boolean;
  output: string;
}

function runProcess(options: {
  command: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
  timeoutMs: number;
  outputBytes: number;
  signal: AbortSignal;
}): Promise<ProcessResult> {
  return new Promise((resolve, reject) => {
    if (options.signal.aborted) {
      reject(new Error('the run was stopped before the command started'));
      return;
    }
    const output = createOutputCollector(options.outputBytes);
    // detached: the child leads its own process group, so a kill reaches its children too.
    const child = spawn(options.command, options.args, {
      cwd: options.cwd,
      env: options.env,
      shell: false,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let timedOut = false;
    let stopped = false;
    const killGroup = () => {
      if (child.pid === undefined) return;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // The group is already gone.
      }
    };
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup();
    }, options.timeoutMs);
    const onAbort = () => {
      stopped = true;
      killGroup();
    };
    options.signal.addEventListener('abort', onAbort, { once: true });
    const cleanUp = () => {
      clearTimeout(timer);
      options.signal.removeEventListener('abort', onAbort);
    };
    child.stdout.on('data', output.push);
    child.stderr.on('data', output.push);
    // Background processes the command left behind would hold the pipes open: end them too.
    child.on('exit', killGroup);
    child.on('error', (error: NodeJS.ErrnoException) => {
      cleanUp();
      reject(
        error.code === 'ENOENT'
          ? new Error(`command not found: ${options.command} (not on PATH, and no such file)`)
          : error,
      );
    });
    child.on('close', (exitCode, signal) => {
      cleanUp();
      resolve({ exitCode, signal, timedOut, stopped, output: output.text() });
    });
  });
}

/** Keeps the first 60% and the last 40% of `capBytes` of a stream, counting what is cut. */
function createOutputCollector(capBytes: number) {
  const headCap = Math.ceil(capBytes * 0.6);
  const tailCap = capBytes - headCap;
  const head: Buffer[] = [];
  let headBytes = 0;
  let tail = Buffer.alloc(0);
  let total = 0;
  return {
    push(chunk: Buffer): void {
      total += chunk.length;
      let rest = chunk;
      if (headBytes < headCap) {
        const taken = rest.subarray(0, headCap - headBytes);
        head.push(taken);
        headBytes += taken.length;
        rest = rest.subarray(taken.length);
      }
      if (rest.length === 0 || tailCap === 0) return;
      const joined = Buffer.concat([tail, rest]);
      tail = Buffer.from(joined.subarray(Math.max(0, joined.length - tailCap)));
    },
    text(): string {
      const cut = total - headBytes - tail.length;
      const headText = Buffer.concat(head).toString('utf8');
      if (cut <= 0) return headText + tail.toString('utf8');
      return `${headText}\n[… ${cut} bytes of output cut here. Do not re-run commands with side effects just to see them; ask for less output instead (a filter, a quieter flag).]\n${tail.toString('utf8')}`;
    },
  };
}

function quote(argument: string): string {
  return /^[\w@%+=:,./-]+$/.test(argument) ? argument : `'${argument.replaceAll("'", `'\\''`)}'`;
}
