import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Fact } from '../../events/facts.ts';
import type { ModelMessage } from '../../events/messages.ts';
import { lowdbStore } from '../../store/folder/lowdb-store.ts';
import type { ChildOptions } from './crash-scenario.ts';

const childFile = fileURLToPath(new URL('./agent-child.ts', import.meta.url));
// Node's on-disk compile cache halves each child's start-up (~0.35 s → ~0.15 s); it changes no
// behaviour, and Node checks every cached entry against the source it compiles.
const compileCache = path.join(tmpdir(), 'turnlog-crash-compile-cache');

/** What one agent child did before it exited or was killed. */
export interface ChildResult {
  pid: number;
  /** Every stdout line the child printed (what the parent saw before the kill, if killed). */
  lines: string[];
  /** True when our SIGKILL ended it. */
  killed: boolean;
  code: number | null;
  stderr: string;
}

/**
 * Decides, for each line the child prints (`index` counts from 0), whether to kill it: a delay in
 * milliseconds before the SIGKILL, or `undefined` to keep watching.
 */
export type KillRule = (line: string, index: number) => number | undefined;

/**
 * Runs test/crash/agent-child.ts with `process.execPath` and resolves when it exits: by itself,
 * or by SIGKILL once `killWhen` asks for it. A child that neither finishes nor is killed within
 * `timeoutMs` is killed and reported as hung.
 */
export function runChild(
  options: ChildOptions,
  killWhen?: KillRule,
  timeoutMs = 30_000,
): Promise<ChildResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [childFile, JSON.stringify(options)], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, NODE_COMPILE_CACHE: compileCache },
    });
    const lines: string[] = [];
    let buffered = '';
    let stderr = '';
    let killScheduled = false;
    let killed = false;
    let hung = false;
    const kill = () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      killed = true;
      child.kill('SIGKILL');
    };
    const watchdog = setTimeout(() => {
      hung = true;
      kill();
    }, timeoutMs);
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      stderr += chunk;
    });
    child.stdout.on('data', (chunk: string) => {
      buffered += chunk;
      const parts = buffered.split('\n');
      buffered = parts.pop() ?? '';
      for (const line of parts) {
        lines.push(line);
        if (killScheduled || killWhen === undefined) continue;
        const delayMs = killWhen(line, lines.length - 1);
        if (delayMs === undefined) continue;
        killScheduled = true;
        if (delayMs === 0) kill();
        else setTimeout(kill, delayMs);
      }
    });
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(watchdog);
      if (buffered !== '') lines.push(buffered);
      if (hung) {
        reject(
          new Error(
            `agent child ${child.pid} neither finished nor was killed within ${timeoutMs} ms; it printed:\n${lines.join('\n')}\n${stderr}`,
          ),
        );
        return;
      }
      resolve({
        pid: child.pid ?? -1,
        lines,
        killed: killed && signal === 'SIGKILL',
        code,
        stderr,
      });
    });
  });
}

/** The session's log, read through a new lowdbStore (which must open: the log parses). */
export async function readLog(dir: string, sessionId: string): Promise<Fact[]> {
  const store = lowdbStore({ dir });
  try {
    return await store.read(sessionId);
  } finally {
    await store.close();
  }
}

/** One line of the side file: a tool execution that got as far as `execute`. */
export interface Execution {
  callId: string;
  tool: string;
  pid: number;
}

/** The executions recorded in the side file, in order. */
export function readExecutions(sideFile: string): Execution[] {
  if (!existsSync(sideFile)) return [];
  return readFileSync(sideFile, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      const [callId = '', tool = '', pid = ''] = line.split(' ');
      return { callId, tool, pid: Number(pid) };
    });
}

/** How many provider requests the request file records. */
export function readRequestCount(requestFile: string): number {
  if (!existsSync(requestFile)) return 0;
  return readFileSync(requestFile, 'utf8')
    .split('\n')
    .filter((line) => line !== '').length;
}

/** The `history <json>` a finished child printed. */
export function printedHistory(result: ChildResult): ModelMessage[] | undefined {
  const line = result.lines.find((candidate) => candidate.startsWith('history '));
  return line === undefined
    ? undefined
    : (JSON.parse(line.slice('history '.length)) as ModelMessage[]);
}

/** The `recovered …` line of a child started in `recover` mode, split into its fields. */
export function recoveredLine(result: ChildResult) {
  const line = result.lines.find((candidate) => candidate.startsWith('recovered '));
  if (line === undefined) return undefined;
  const [, status, interruptedIn, indeterminate = '-'] = line.split(' ');
  return {
    status,
    interruptedIn,
    indeterminate: indeterminate === '-' ? [] : indeterminate.split(',').sort(),
  };
}

/** One line per fact (`seq type state stepId/callId attempt outcome`), for failure messages. */
export function formatLog(facts: readonly Fact[]): string {
  return facts
    .map((fact) => {
      const where = 'callId' in fact ? fact.callId : 'stepId' in fact ? fact.stepId : '';
      const attempt = fact.type === 'step.started' ? ` attempt ${fact.attempt}` : '';
      const outcome =
        fact.type === 'tool.settled'
          ? ` ${fact.outcome}`
          : fact.type === 'run.ended'
            ? ` ${fact.status}/${fact.reason}`
            : '';
      return `  ${fact.seq} ${fact.type} → ${fact.state ?? '-'} ${where}${attempt}${outcome}`;
    })
    .join('\n');
}

/** mulberry32: a small seeded generator, so a kill schedule can be replayed from its seed. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let value = state;
    value = Math.imul(value ^ (value >>> 15), value | 1);
    value ^= value + Math.imul(value ^ (value >>> 7), value | 61);
    return ((value ^ (value >>> 14)) >>> 0) / 4_294_967_296;
  };
}
