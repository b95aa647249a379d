// The deploy check on many parked runs (issue 28): checkDeploy over 10,000 and 100,000 sessions
// parked in awaitingPermission, on memoryStore and on lowdbStore, against a baseline measured in
// the same run: reading what any check must read (openRuns(), then every open run's session).
// The check's cost over the baseline is folding each run with the turn machine (resumeRun) and
// comparing fingerprints. Two checks: the code that parked the runs (nothing named) and the code
// with the pending call's tool renamed (every run named).
// Run alone: npx node bench/deploy-check.ts (npx node bench/deploy-check.ts 100000: that size)
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { scriptedModel } from '../adapters/scripted-model.ts';
import { checkDeploy } from '../operations/deploy-check.ts';
import { createRuntime, type RuntimeOptions } from '../runtime.ts';
import type { EventStore } from '../store/event-store.ts';
import { lowdbStore } from '../store/folder/lowdb-store.ts';
import { memoryStore } from '../store/memory/memory-store.ts';
import { defineTool } from '../tools/define-tool.ts';
import { appendAll } from './parked-memory.ts';
import { type BenchTable, formatMs } from './table.ts';

/** One store and size: the baseline and the two checks, wall and CPU time. */
export interface DeployCheckRow {
  store: 'memoryStore' | 'lowdbStore';
  runs: number;
  baselineMs: number;
  checkMs: number;
  checkCpuMs: number;
  renamedMs: number;
  blockedWhenRenamed: number;
}

function options(toolName: string): RuntimeOptions {
  const sendInvoice = defineTool({
    description: 'Sends an invoice.',
    inputSchema: z.object({ customer: z.string() }),
    permission: 'ask',
    execute: (input) => `sent to ${input.customer}`,
  });
  return {
    model: scriptedModel(() => ({
      toolCalls: [{ id: 'call_inv', name: 'sendInvoice', input: { customer: 'acme' } }],
    })),
    tools: { [toolName]: sendInvoice },
  };
}

/** The facts of one run parked waiting for a person to allow `call_inv`. */
async function parkedTemplate() {
  const store = memoryStore();
  const runtime = createRuntime({ ...options('sendInvoice'), store });
  const turn = await runtime.send({ sessionId: 'template', text: 'Invoice acme.' });
  for await (const event of turn.events) if (event.type === 'tool.permission.requested') break;
  const facts = await runtime.facts('template');
  await runtime.close();
  return facts;
}

function fingerprint(toolName: string) {
  return createRuntime({ ...options(toolName), store: memoryStore() }).fingerprint();
}

async function timed<T>(work: () => Promise<T>): Promise<{ value: T; ms: number; cpuMs: number }> {
  const cpu = process.cpuUsage();
  const started = performance.now();
  const value = await work();
  const used = process.cpuUsage(cpu);
  return { value, ms: performance.now() - started, cpuMs: (used.user + used.system) / 1000 };
}

/** What any check must read: every open run's session. */
async function readOpenRuns(store: EventStore): Promise<number> {
  let facts = 0;
  for (const { sessionId } of await store.openRuns()) facts += (await store.read(sessionId)).length;
  return facts;
}

/** One store and size. lowdbStore is reopened before each measurement: every one reads cold. */
async function measure(kind: DeployCheckRow['store'], runs: number): Promise<DeployCheckRow> {
  const dir =
    kind === 'lowdbStore' ? await mkdtemp(path.join(tmpdir(), 'turnlog-deploy-check-')) : '';
  const memory = memoryStore();
  const open = () => (kind === 'memoryStore' ? memory : lowdbStore({ dir }));
  try {
    const seeding = open();
    await appendAll(seeding, await parkedTemplate(), 'parked', runs);
    if (kind === 'lowdbStore') await seeding.close();
    const same = fingerprint('sendInvoice');
    const renamed = fingerprint('issueInvoice');
    const onStore = async <T>(work: (store: EventStore) => Promise<T>) => {
      const store = open();
      try {
        return await timed(() => work(store));
      } finally {
        if (kind === 'lowdbStore') await store.close();
      }
    };
    const baseline = await onStore(readOpenRuns);
    const check = await onStore((store) => checkDeploy({ store, fingerprint: same }));
    const blocked = await onStore((store) => checkDeploy({ store, fingerprint: renamed }));
    if (check.value.checked !== runs || check.value.blocked.length !== 0) {
      throw new Error(`deploy-check bench: expected ${runs} runs checked and none blocked`);
    }
    return {
      store: kind,
      runs,
      baselineMs: baseline.ms,
      checkMs: check.ms,
      checkCpuMs: check.cpuMs,
      renamedMs: blocked.ms,
      blockedWhenRenamed: blocked.value.blocked.length,
    };
  } finally {
    if (dir !== '') await rm(dir, { recursive: true, force: true });
  }
}

/** Every store at 10,000 and 100,000 parked runs (or only `sizes`). */
export async function benchDeployCheck(sizes = [10_000, 100_000]): Promise<DeployCheckRow[]> {
  const rows: DeployCheckRow[] = [];
  for (const runs of sizes) {
    for (const kind of ['memoryStore', 'lowdbStore'] as const) rows.push(await measure(kind, runs));
  }
  return rows;
}

/** The rows as a table. */
export function deployCheckTable(rows: DeployCheckRow[]): BenchTable {
  return {
    title: 'The deploy check (checkDeploy) over parked runs, against reading them',
    columns: [
      'store',
      'parked runs',
      'read every open run (baseline)',
      'checkDeploy, same code',
      'ratio',
      'per run',
      'CPU',
      'checkDeploy, tool renamed (runs named)',
    ],
    rows: rows.map((row) => [
      row.store,
      row.runs.toLocaleString('en-US'),
      formatMs(row.baselineMs),
      formatMs(row.checkMs),
      `${(row.checkMs / row.baselineMs).toFixed(2)}×`,
      `${((row.checkMs / row.runs) * 1000).toFixed(0)} µs`,
      formatMs(row.checkCpuMs),
      `${formatMs(row.renamedMs)} (${row.blockedWhenRenamed.toLocaleString('en-US')})`,
    ]),
    notes: [
      'baseline: openRuns() and read() of every open run, what any check must read; lowdbStore reopened (cold) before each column',
      'checkDeploy folds each run with the turn machine as recover() would (resumeRun) and compares its recorded fingerprint with the runtime’s',
    ],
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const size = Number(process.argv[2]);
  const rows = await benchDeployCheck(Number.isInteger(size) && size > 0 ? [size] : undefined);
  const { formatTable } = await import('./table.ts');
  console.log(formatTable(deployCheckTable(rows)));
}
