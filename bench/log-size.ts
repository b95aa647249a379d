// Log size as a conversation grows: bytes on disk of turnlog's lowdb folder and of LangGraph's
// Postgres checkpoints after conversations of 25, 50, 100 and 200 steps, to show which grows
// linearly with steps and which faster.
// Run alone: npx node bench/log-size.ts
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { lowdbStore } from '../store/folder/lowdb-store.ts';
import { conversationModel } from './conversation.ts';
import { agentGraph, runAgentGraph } from './langgraph-agent.ts';
import { openPostgresCheckpointer } from './postgres-checkpointer.ts';
import { type BenchTable, formatBytes } from './table.ts';
import { conversationRuntime, runTurnlog } from './turnlog-side.ts';

/** Sizes after one conversation of `steps` steps. */
export interface LogSizeRow {
  steps: number;
  /** Facts in the turnlog session. */
  facts: number;
  /** Bytes of every file under the lowdb store's `sessions/` folder. */
  turnlogBytes: number;
  /** LangGraph's thread rows (checkpoints, blobs, writes) as Postgres stores them. */
  langGraphRowBytes: number;
  /** The same rows' payloads uncompressed (JSON text and blob bytes). */
  langGraphPayloadBytes: number;
  /** The three checkpoint tables on disk, with indexes and TOAST. */
  langGraphRelationBytes: number;
  /** Checkpoint rows of the thread. */
  checkpoints: number;
}

/** Runs one conversation per step count on each side and measures what it left on disk. */
export async function benchLogSize(
  stepCounts: readonly number[] = [25, 50, 100, 200],
): Promise<LogSizeRow[]> {
  const postgres = await openPostgresCheckpointer('turnlog_bench_log_size');
  const rows: LogSizeRow[] = [];
  try {
    for (const steps of stepCounts) {
      const dir = await mkdtemp(path.join(tmpdir(), 'turnlog-bench-log-'));
      try {
        const runtime = conversationRuntime({ store: lowdbStore({ dir }), steps });
        await runTurnlog({ runtime, sessionId: 'session_1', steps });
        const facts = (await runtime.facts('session_1')).length;
        await runtime.close();
        const turnlogBytes = await folderBytes(path.join(dir, 'sessions'));

        await postgres.truncate();
        const graph = agentGraph({ model: conversationModel(steps), checkpointer: postgres.saver });
        await runAgentGraph({ graph, threadId: 'thread_1', steps, durability: 'sync' });
        const bytes = await postgres.bytes('thread_1');
        const checkpoints = await postgres.saver.list({ configurable: { thread_id: 'thread_1' } });
        let count = 0;
        for await (const _checkpoint of checkpoints) count += 1;
        rows.push({
          steps,
          facts,
          turnlogBytes,
          langGraphRowBytes: bytes.rows,
          langGraphPayloadBytes: bytes.payload,
          langGraphRelationBytes: bytes.relations,
          checkpoints: count,
        });
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    }
    return rows;
  } finally {
    await postgres.close();
  }
}

async function folderBytes(folder: string): Promise<number> {
  let total = 0;
  for (const entry of await readdir(folder, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) total += (await stat(path.join(entry.parentPath, entry.name))).size;
  }
  return total;
}

/** The log size rows as a table: bytes, bytes per step, and growth against the previous row. */
export function logSizeTable(rows: LogSizeRow[]): BenchTable {
  const growth = (index: number, pick: (row: LogSizeRow) => number) => {
    const previous = rows[index - 1];
    const row = rows[index] as LogSizeRow;
    if (previous === undefined) return '';
    return ` (×${(pick(row) / pick(previous)).toFixed(2)} for ×${(row.steps / previous.steps).toFixed(1)} steps)`;
  };
  const last = rows.at(-1);
  const first = rows[0];
  const notes = [
    'turnlog: lowdbStore, every file under sessions/ (segments of 256 facts); LangGraph: PostgresSaver, `pg_column_size` of the thread rows in checkpoints, checkpoint_blobs and checkpoint_writes (after TRUNCATE), and `pg_total_relation_size` of the three tables',
    'one conversation per row: N−1 tool steps and a final text step; LangGraph writes a checkpoint per superstep (two per tool step) and stores the whole `messages` channel again in checkpoint_blobs whenever it changes',
  ];
  if (first !== undefined && last !== undefined && last !== first) {
    const stepsGrowth = last.steps / first.steps;
    notes.push(
      `from ${first.steps} to ${last.steps} steps (×${stepsGrowth.toFixed(0)}): turnlog ×${(last.turnlogBytes / first.turnlogBytes).toFixed(1)}, LangGraph rows ×${(last.langGraphRowBytes / first.langGraphRowBytes).toFixed(1)} (payload uncompressed ×${(last.langGraphPayloadBytes / first.langGraphPayloadBytes).toFixed(1)}); Postgres TOAST-compresses the large message blobs, which hides part of the quadratic growth`,
    );
  }
  return {
    title: 'Log size after N steps (bytes on disk)',
    columns: [
      'steps',
      'turnlog facts',
      'turnlog bytes',
      'turnlog per step',
      'LangGraph checkpoints',
      'LangGraph rows',
      'LangGraph per step',
      'LangGraph payload uncompressed',
      'LangGraph tables on disk',
    ],
    rows: rows.map((row, index) => [
      String(row.steps),
      String(row.facts),
      `${formatBytes(row.turnlogBytes)}${growth(index, (value) => value.turnlogBytes)}`,
      formatBytes(row.turnlogBytes / row.steps),
      String(row.checkpoints),
      `${formatBytes(row.langGraphRowBytes)}${growth(index, (value) => value.langGraphRowBytes)}`,
      formatBytes(row.langGraphRowBytes / row.steps),
      `${formatBytes(row.langGraphPayloadBytes)}${growth(index, (value) => value.langGraphPayloadBytes)}`,
      formatBytes(row.langGraphRelationBytes),
    ]),
    notes,
  };
}

if (import.meta.main) {
  const { formatTable } = await import('./table.ts');
  console.log(formatTable(logSizeTable(await benchLogSize())));
}
