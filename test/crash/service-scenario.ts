import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { LanguageModelV4, LanguageModelV4CallOptions } from '@ai-sdk/provider';
import { z } from 'zod';
import type { ScriptedResponse } from '../../adapters/scripted-model.ts';
import { type Fact, factsOfType } from '../../events/facts.ts';
import { defineTool } from '../../tools/define-tool.ts';
import { seededRandom } from './crash-harness.ts';
import { answeredCalls, type ChildOptions } from './crash-scenario.ts';
import { pacedModel } from './workers-scenario.ts';

/**
 * The service campaigns' scenario (issue 24, evidence): tools that call the simulated external
 * service (test/crash/external-service.ts, a process of its own with a durable ledger) and a
 * scripted model that calls them in mixed orders, seeded per run:
 *
 * - `charge` has `reconcile`: it asks the service whether a charge with the call's idempotency
 *   key was applied (the service applies every charge request, so running it again would charge
 *   twice);
 * - `notify` is `idempotent`: the service applies one notify per key;
 * - `shell` has neither: the service applies every request, and only a person can answer for it.
 *
 * Each tool sleeps half of `toolMs` before its request and half after the answer, so a kill can
 * land before the effect (`reconcile` finds nothing: it runs again) or after it (`reconcile`
 * finds it: the call settles with the output it had).
 */

/** What the tools and the model of one agent process are told (serializable: passed to children). */
export interface ServiceOptions {
  /** The service's base URL (`http://127.0.0.1:<port>`). */
  url: string;
  toolMs: number;
  chunkMs: number;
  /** One line per provider request, `<sessionId> <workerId> <pid>`. */
  requestFile: string;
  /** Recorded with each effect (the workers campaign checks who executed a call). */
  workerId?: string;
  /** A planted bug: `charge`'s `reconcile` answers `not-done` without asking the service. */
  plantBlindReconcile?: boolean;
}

/**
 * What test/crash/agent-child.ts is told to run the service scenario: its tools call the service,
 * its model plans the run from `seed`.
 */
export type ServiceChildOptions = ChildOptions & { service: ServiceOptions & { seed: number } };

/** One effect the service applied, as its ledger records it. */
export interface LedgerEntry {
  op: 'charge' | 'notify' | 'shell';
  key: string;
  sessionId: string;
  callId: string;
  workerId: string;
  pid: number;
}

export const serviceToolNames = ['charge', 'notify', 'shell'] as const;

/** The user text of a run: its session (the request file names it) and the seed of its calls. */
export function serviceUserText(sessionId: string, seed: number): string {
  return `run ${sessionId} ${seed}`;
}

function userWords(prompt: LanguageModelV4CallOptions['prompt']): string[] {
  for (const message of prompt) {
    if (message.role !== 'user') continue;
    for (const part of message.content) if (part.type === 'text') return part.text.split(' ');
  }
  return [];
}

/** The run's tool steps: 2–3 steps of 1–3 calls, each of a random tool (a pure function of the seed). */
export function servicePlan(seed: number): { id: string; name: string }[][] {
  const random = seededRandom(seed);
  const steps = 2 + Math.floor(random() * 2);
  return Array.from({ length: steps }, (_, step) =>
    Array.from({ length: 1 + Math.floor(random() * 3) }, (_, index) => ({
      id: `c${step + 1}${String.fromCharCode(97 + index)}`,
      name: serviceToolNames[Math.floor(random() * serviceToolNames.length)] as string,
    })),
  );
}

/** The answer to a request: the first step of the plan whose calls do not all have results. */
export function serviceRespond(call: LanguageModelV4CallOptions): ScriptedResponse {
  const seed = Number(userWords(call.prompt)[2] ?? 0);
  const answered = answeredCalls(call.prompt);
  const step = servicePlan(seed).find((calls) => !calls.every(({ id }) => answered.has(id)));
  if (step === undefined) return { text: ['All ', 'done.'] };
  return {
    text: ['Working ', 'on it.'],
    toolCalls: step.map(({ id, name }) => ({ id, name, input: { amount: id.length * 7 } })),
  };
}

export function serviceModel(options: ServiceOptions): LanguageModelV4 {
  return pacedModel(serviceRespond, options);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The three tools. `print` (the single-process child's stdout) hears `exec <callId>` before a
 * request and `effect <callId>` once the service answered it.
 */
export function serviceTools(options: ServiceOptions, print: (line: string) => void = () => {}) {
  const call = async (
    op: string,
    context: { idempotencyKey: string; sessionId: string; callId: string; signal: AbortSignal },
  ) => {
    print(`exec ${context.callId}`);
    await sleep(options.toolMs / 2);
    const response = await fetch(`${options.url}/${op}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        key: context.idempotencyKey,
        sessionId: context.sessionId,
        callId: context.callId,
        workerId: options.workerId ?? '-',
        pid: process.pid,
      }),
    });
    if (!response.ok) throw new Error(`${op}: the service answered ${response.status}`);
    await response.json();
    print(`effect ${context.callId}`);
    await sleep(options.toolMs / 2);
  };
  const input = z.object({ amount: z.number() });
  return {
    charge: defineTool({
      description: 'Charges an amount.',
      inputSchema: input,
      execute: async ({ amount }, context) => {
        await call('charge', context);
        return `charged ${amount}`;
      },
      reconcile: async ({ amount }, { idempotencyKey }) => {
        if (options.plantBlindReconcile === true) return { status: 'not-done' };
        const response = await fetch(
          `${options.url}/charge?key=${encodeURIComponent(idempotencyKey)}`,
        );
        const { found } = (await response.json()) as { found: boolean };
        return found ? { status: 'done', output: `charged ${amount}` } : { status: 'not-done' };
      },
    }),
    notify: defineTool({
      description: 'Sends a notification.',
      inputSchema: input,
      idempotent: true,
      execute: async ({ amount }, context) => {
        await call('notify', context);
        return `notified ${amount}`;
      },
    }),
    shell: defineTool({
      description: 'Runs a command.',
      inputSchema: input,
      execute: async ({ amount }, context) => {
        await call('shell', context);
        return `ran ${amount}`;
      },
    }),
  };
}

const serviceFile = fileURLToPath(new URL('./external-service.ts', import.meta.url));
const compileCache = path.join(tmpdir(), 'turnlog-crash-compile-cache');

/** A running external service: its URL, its ledger, and how to stop it. */
export interface RunningService {
  url: string;
  ledgerFile: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

/** Starts test/crash/external-service.ts on `ledgerFile` and resolves once it listens. */
export function startService(ledgerFile: string): Promise<RunningService> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [serviceFile, ledgerFile], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, NODE_COMPILE_CACHE: compileCache },
    });
    const exited = new Promise<void>((done) => child.on('close', () => done()));
    let output = '';
    let stderr = '';
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      stderr += chunk;
    });
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      output += chunk;
      const port = /listening (\d+)\n/.exec(output)?.[1];
      if (port === undefined) return;
      resolve({
        url: `http://127.0.0.1:${port}`,
        ledgerFile,
        child,
        async stop() {
          if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
          await exited;
        },
      });
    });
    child.on('error', reject);
    void exited.then(() => reject(new Error(`the external service exited: ${stderr}`)));
  });
}

/** The effects the service applied, in order (all sessions). */
export function readLedger(ledgerFile: string): LedgerEntry[] {
  if (!existsSync(ledgerFile)) return [];
  return readFileSync(ledgerFile, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as LedgerEntry);
}

/** What one run did at the service and in its log, counted after it ended. */
export interface ServiceFigures {
  /** Calls the model made, by tool. */
  calls: Record<string, number>;
  /** Calls that started and had not settled when a process died (`tool.indeterminate`), by tool. */
  indeterminate: Record<string, number>;
  /** `tool.indeterminate` facts (a call run again, or a check cut by a kill, is marked again). */
  marks: number;
  /** Those of `charge` and `notify` answered by their tool: `tool.reconciled` other than `unknown`. */
  answeredByTool: number;
  /** Calls a person was asked about (a mark without a check, or `reconcile` said `unknown`), by tool. */
  asked: Record<string, number>;
  /** Answers a person gave (`tool.permission.decided` by `user`). */
  decisions: number;
  /** `tool.reconciled` answers. */
  reconciled: Record<string, number>;
  /** Effects that landed twice at the service: `op key ×n`. */
  twice: string[];
  runEnded: number;
}

const bump = (counts: Record<string, number>, key: string) => {
  counts[key] = (counts[key] ?? 0) + 1;
};

/** The figures of one run's log and the ledger entries of its session. */
export function serviceFigures(facts: readonly Fact[], ledger: readonly LedgerEntry[]) {
  const figures: ServiceFigures = {
    calls: {},
    indeterminate: {},
    marks: 0,
    answeredByTool: 0,
    asked: {},
    decisions: 0,
    reconciled: {},
    twice: [],
    runEnded: factsOfType(facts, 'run.ended').length,
  };
  for (const step of factsOfType(facts, 'step.completed'))
    for (const call of step.toolCalls) bump(figures.calls, call.name);
  // Per call (a call run again may be cut and marked again): asked when any of its marks had no
  // check, or its tool answered `unknown`; else answered by its tool.
  const marked = new Map<string, { name: string; asked: boolean }>();
  for (const fact of facts) {
    if (fact.type === 'tool.indeterminate') {
      figures.marks += 1;
      const call = marked.get(fact.callId) ?? { name: fact.name, asked: false };
      if (fact.check === undefined) call.asked = true;
      marked.set(fact.callId, call);
    }
    if (fact.type === 'tool.reconciled' && fact.answer === 'unknown') {
      const call = marked.get(fact.callId);
      if (call !== undefined) call.asked = true;
    }
  }
  for (const { name, asked } of marked.values()) {
    bump(figures.indeterminate, name);
    if (asked) bump(figures.asked, name);
    else if (name !== 'shell') figures.answeredByTool += 1;
  }
  for (const fact of factsOfType(facts, 'tool.reconciled')) bump(figures.reconciled, fact.answer);
  figures.decisions = factsOfType(facts, 'tool.permission.decided').filter(
    (fact) => fact.by === 'user',
  ).length;
  const landed = new Map<string, number>();
  for (const entry of ledger) {
    const id = `${entry.op} ${entry.key}`;
    landed.set(id, (landed.get(id) ?? 0) + 1);
  }
  for (const [id, count] of landed) if (count > 1) figures.twice.push(`${id} ×${count}`);
  return figures;
}

/** The figures, as violations: none twice, every checkable call answered, asked only about shell, one end. */
export function serviceViolations(figures: ServiceFigures): string[] {
  const problems = figures.twice.map(
    (effect) => `an effect landed twice at the service: ${effect}`,
  );
  const checkable = (figures.indeterminate.charge ?? 0) + (figures.indeterminate.notify ?? 0);
  if (figures.answeredByTool !== checkable) {
    problems.push(
      `${figures.answeredByTool} of ${checkable} indeterminate calls of charge or notify answered without a person`,
    );
  }
  for (const [name, count] of Object.entries(figures.asked)) {
    if (name !== 'shell') problems.push(`a person was asked about ${count} ${name} calls`);
  }
  if (figures.runEnded !== 1) problems.push(`${figures.runEnded} run.ended facts, expected 1`);
  return problems;
}

/** Adds `figures` into `total` (for a campaign's sums). */
export function addFigures(total: ServiceFigures, figures: ServiceFigures): void {
  for (const key of ['calls', 'indeterminate', 'asked', 'reconciled'] as const)
    for (const [name, count] of Object.entries(figures[key]))
      total[key][name] = (total[key][name] ?? 0) + count;
  total.answeredByTool += figures.answeredByTool;
  total.marks += figures.marks;
  total.decisions += figures.decisions;
  total.twice.push(...figures.twice);
  total.runEnded += figures.runEnded;
}

export function emptyFigures(): ServiceFigures {
  return serviceFigures([], []);
}

/** The figures as the lines architecture/crash-testing.md records. */
export function formatFigures(figures: ServiceFigures): string {
  const list = (counts: Record<string, number>) =>
    Object.entries(counts)
      .sort()
      .map(([name, count]) => `${name} ${count}`)
      .join(', ') || 'none';
  const checkable = (figures.indeterminate.charge ?? 0) + (figures.indeterminate.notify ?? 0);
  return [
    `  calls: ${list(figures.calls)}`,
    `  indeterminate calls: ${list(figures.indeterminate)} (${figures.marks} tool.indeterminate); of charge and notify answered without a person: ${figures.answeredByTool}/${checkable}`,
    `  tool.reconciled: ${list(figures.reconciled)}`,
    `  a person asked about: ${list(figures.asked)} (${figures.decisions} decisions)`,
    `  effects twice at the service: ${figures.twice.length}; run.ended: ${figures.runEnded}`,
  ].join('\n');
}

/** The ledger's entries as executions (the crash invariants' side-file shape): what took effect. */
export function ledgerExecutions(ledger: readonly LedgerEntry[]) {
  return ledger.map((entry) => ({
    sessionId: entry.sessionId,
    callId: entry.callId,
    tool: entry.op,
    workerId: entry.workerId,
    pid: entry.pid,
  }));
}
