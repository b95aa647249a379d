// openRuns() after a reopen, issue 29 item 10: lowdbStore checks each tail's open-runs summary
// against the run facts of the segments before it (the log is the truth), which reads those
// segments' bytes and parses only their run.started/run.ended lines. Measured against, in the same
// run: the same number of sessions holding only a tail (what openRuns() cost when it trusted the
// header: one record and one tail per session), and a full read of every session.
// Files are written just before, so they are read from the OS cache (a warm restart).
// Run alone: npx node bench/open-runs.ts [sessions] [facts per session]
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { NewFact } from '../events/facts.ts';
import { lowdbStore } from '../store/folder/lowdb-store.ts';
import { nodeStoreFs, type StoreFs } from '../store/folder/store-fs.ts';
import { median } from './stats.ts';
import { type BenchTable, formatMs } from './table.ts';

/** One measurement: sessions of `facts` facts each (256 a segment), median of `rounds` reopens. */
export interface OpenRunsRow {
  shape: string;
  sessions: number;
  facts: number;
  openRunsMs: number;
  readAllMs: number;
}

/** Setup only: a file system whose syncs do nothing (the measured stores use the real one). */
const noSync: StoreFs = {
  ...nodeStoreFs,
  async open(file, flags) {
    const handle = await nodeStoreFs.open(file, flags);
    return { ...handle, datasync: async () => {}, sync: async () => {} };
  },
};

const limits = {
  maxSteps: 10,
  maxAttempts: 3,
  maxOutputTokens: undefined,
  toolOutputChars: 10_000,
  contextWindowTokens: undefined,
  toolConcurrency: 4,
  stopGraceMs: 1_000,
};

async function writeSessions(dir: string, sessions: number, facts: number): Promise<void> {
  const store = lowdbStore({ dir, fs: noSync });
  for (let index = 0; index < sessions; index += 1) {
    const sessionId = `s${index}`;
    const envelope = (id: string) => ({
      id,
      at: '2026-01-10T00:00:00.000Z',
      sessionId,
      turnId: 'turn_1',
      runId: 'run_1',
    });
    const all = [
      {
        ...envelope('f0'),
        type: 'run.started',
        input: { text: 'Summarize the open invoices.' },
        runtimeVersion: 'bench',
        limits,
      },
    ] as NewFact[];
    for (let seq = 1; seq < facts; seq += 1) {
      const text = `A steering message of about two hundred characters. ${'x'.repeat(150)}`;
      all.push({ ...envelope(`f${seq}`), type: 'steering.received', messageId: `m${seq}`, text });
    }
    for (let from = 0; from < all.length; from += 500) {
      await store.append(sessionId, all.slice(from, from + 500));
    }
  }
  await store.close();
}

async function measure(
  dir: string,
  rounds: number,
): Promise<{ openRunsMs: number; readAllMs: number }> {
  const openRuns: number[] = [];
  const readAll: number[] = [];
  for (let round = 0; round < rounds; round += 1) {
    let store = lowdbStore({ dir });
    let started = performance.now();
    const open = await store.openRuns();
    openRuns.push(performance.now() - started);
    await store.close();
    store = lowdbStore({ dir, maxCachedSessions: 0 });
    started = performance.now();
    for (const run of open) await store.read(run.sessionId);
    readAll.push(performance.now() - started);
    await store.close();
  }
  return { openRunsMs: median(openRuns), readAllMs: median(readAll) };
}

/** Sessions with 8 segments (2,048 facts) against sessions that are one tail (256 facts). */
export async function benchOpenRuns(
  sessions = 200,
  facts = 2_048,
  rounds = 5,
): Promise<OpenRunsRow[]> {
  const root = await mkdtemp(path.join(tmpdir(), 'turnlog-bench-open-runs-'));
  try {
    const rows: OpenRunsRow[] = [];
    for (const [shape, count] of [
      ['one tail segment each (the old cost)', 256],
      [`${Math.ceil(facts / 256)} segments each`, facts],
    ] as const) {
      const dir = path.join(root, String(count));
      await writeSessions(dir, sessions, count);
      rows.push({ shape, sessions, facts: count, ...(await measure(dir, rounds)) });
    }
    return rows;
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

export function openRunsTable(rows: OpenRunsRow[]): BenchTable {
  const base = rows[0]?.openRunsMs ?? 1;
  return {
    title:
      'lowdbStore openRuns() after a reopen: the tail summary checked against the log (issue 29)',
    columns: [
      'sessions',
      'facts each',
      'openRuns()',
      'vs one tail each',
      'read every session',
      'openRuns / full read',
    ],
    rows: rows.map((row) => [
      `${row.sessions} (${row.shape})`,
      String(row.facts),
      formatMs(row.openRunsMs),
      `${(row.openRunsMs / base).toFixed(2)}×`,
      formatMs(row.readAllMs),
      `${((row.openRunsMs / row.readAllMs) * 100).toFixed(0)} %`,
    ]),
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [sessions, facts] = process.argv.slice(2).map(Number);
  const rows = await benchOpenRuns(sessions || undefined, facts || undefined);
  console.log(JSON.stringify(openRunsTable(rows), null, 2));
}
