// What a runtime's memory grew by, by constructor (class) name: two V8 heap snapshots (before
// and after parking N sessions, say) compared name by name — objects, closures and arrays by
// name, strings and numbers by type — largest growth first, with counts per session. A
// runtime's parts are classes (LiveRuns, RunSinks, ChannelSink, SessionLog, …), so the table
// names what each parked run holds. Self sizes: what the objects of a name occupy themselves.
// Run: npx node bench/heap-summary.ts before.heapsnapshot after.heapsnapshot [sessions=1] [rows=20]
// (TURNLOG_HEAP_SNAPSHOT=prefix npx node bench/parked-memory.ts 100000 writes the two snapshots)
import { readFileSync } from 'node:fs';
import { formatBytes } from './table.ts';

interface HeapSnapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]] } };
  nodes: number[];
  strings: string[];
}

/** One name's total: how many nodes carry it and their summed self size. */
export interface HeapRow {
  type: string;
  name: string;
  count: number;
  selfSize: number;
}

/** Sums a snapshot's nodes by type and name (closures by their function's name). */
export function summarizeHeap(snapshot: HeapSnapshot): Map<string, HeapRow> {
  const fields = snapshot.snapshot.meta.node_fields;
  const types = snapshot.snapshot.meta.node_types[0];
  const width = fields.length;
  const typeAt = fields.indexOf('type');
  const nameAt = fields.indexOf('name');
  const sizeAt = fields.indexOf('self_size');
  const rows = new Map<string, HeapRow>();
  for (let offset = 0; offset < snapshot.nodes.length; offset += width) {
    const type = types[snapshot.nodes[offset + typeAt] as number] ?? 'unknown';
    const raw = snapshot.strings[snapshot.nodes[offset + nameAt] as number] ?? '';
    // Strings, numbers and arrays are named by their content: group them by type alone.
    const named = type === 'object' || type === 'closure' || type === 'native';
    const name = named ? raw : '';
    const key = `${type}\u0000${name}`;
    const row = rows.get(key) ?? { type, name, count: 0, selfSize: 0 };
    row.count += 1;
    row.selfSize += snapshot.nodes[offset + sizeAt] as number;
    rows.set(key, row);
  }
  return rows;
}

/** Each name's growth from `before` to `after`, largest first. */
export function heapGrowth(before: Map<string, HeapRow>, after: Map<string, HeapRow>): HeapRow[] {
  return [...after.entries()]
    .map(([key, row]) => ({
      ...row,
      count: row.count - (before.get(key)?.count ?? 0),
      selfSize: row.selfSize - (before.get(key)?.selfSize ?? 0),
    }))
    .sort((left, right) => right.selfSize - left.selfSize);
}

function read(file: string): Map<string, HeapRow> {
  return summarizeHeap(JSON.parse(readFileSync(file, 'utf8')) as HeapSnapshot);
}

if (import.meta.main) {
  const [beforeFile, afterFile, sessionsArgument = '1', limit = '20'] = process.argv.slice(2);
  if (beforeFile === undefined || afterFile === undefined) {
    throw new Error(
      'usage: heap-summary.ts before.heapsnapshot after.heapsnapshot [sessions] [rows]',
    );
  }
  const sessions = Number(sessionsArgument);
  const rows = heapGrowth(read(beforeFile), read(afterFile));
  const total = rows.reduce((sum, row) => sum + row.selfSize, 0);
  console.log('| type | name | count growth | per session | self size growth | per session |');
  console.log('|---|---|---|---|---|---|');
  for (const row of rows.slice(0, Number(limit))) {
    console.log(
      `| ${row.type} | ${row.name || '(by content)'} | ${row.count.toLocaleString('en-US')} | ${(row.count / sessions).toFixed(2)} | ${formatBytes(row.selfSize)} | ${(row.selfSize / sessions).toFixed(0)} B |`,
    );
  }
  console.log(`\nall nodes: ${formatBytes(total)}, ${(total / sessions).toFixed(0)} B per session`);
}
