// Memory of a live run's replay (issue 29 item 5): a run whose one step streams a 3.9 MB text
// as 243,750 deltas of 16 characters, then parks at an ask, so its handle stays live; then 40
// resume streams (toUIMessageStream → createUIMessageStreamResponse, as GET /api/chat/:id/stream
// serves them) each read to the live tail and held open, as 40 reconnected pages would.
// Two modes, each in its own child process started with --expose-gc, in one run:
// - `folded`: the handle as it is (deltas of one stream folded once no reader stands between);
// - `every delta kept`: the baseline, the handle as it was before: a recorder keeps every event
//   the run yields and serves each replay from that list (what EventBuffer did).
// Heap is measured after GC; "peak" is the largest heapUsed seen while the streams replayed.
// Run alone: npx node bench/live-replay-memory.ts (LIVE_REPLAY_STREAMS=n to change the 40)
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { createUIMessageStreamResponse } from 'ai';
import { z } from 'zod';
import { scriptedModel } from '../adapters/scripted-model.ts';
import { toUIMessageStream } from '../adapters/ui/ui-message-stream.ts';
import type { TurnEvent, TurnHandle } from '../machines/effects/turn-channel.ts';
import { createRuntime } from '../runtime.ts';
import { memoryStore } from '../store/memory/memory-store.ts';
import { defineTool } from '../tools/define-tool.ts';
import { type BenchTable, formatBytes, formatMs } from './table.ts';

export type ReplayMode = 'folded' | 'every delta kept';

/** One child process's measurement. */
export interface LiveReplayRow {
  mode: ReplayMode;
  deltas: number;
  textBytes: number;
  streams: number;
  /** Heap after GC held by the parked run and its handle (the store's facts included). */
  handleBytes: number;
  /** Items a fresh replay of the handle yields. */
  replayItems: number;
  /** Heap after GC held by the open resume streams, ÷ streams. */
  bytesPerStream: number;
  /** The largest heapUsed while the streams replayed, above the heap before them. */
  peakBytes: number;
  /** Wall time for one resume stream to reach the live tail (median). */
  replayMs: number;
}

const deltaCount = 243_750;
const chunkOf = (index: number) => `${String(index).padStart(8, '0')}-chunk-;`;

function gcHeap(): number {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error('run with --expose-gc');
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

/** The handle that keeps every event, as EventBuffer did before issue 29 (the baseline). */
function everyDeltaKept(turn: TurnHandle): { handle: TurnHandle; recorded: Promise<void> } {
  const events: TurnEvent[] = [];
  const waiters: (() => void)[] = [];
  const recorded = (async () => {
    for await (const event of turn.events) {
      events.push(event);
      for (const wake of waiters.splice(0)) wake();
      if (event.type === 'tool.permission.requested') return;
    }
  })();
  async function* iterate() {
    let index = 0;
    while (true) {
      while (index < events.length) yield events[index++] as TurnEvent;
      await new Promise<void>((wake) => waiters.push(wake));
    }
  }
  return { handle: { ...turn, events: { [Symbol.asyncIterator]: iterate } }, recorded };
}

/** Reads a resume stream until its bytes show the ask (the live tail); returns it still open. */
async function readToTail(handle: TurnHandle) {
  const response = createUIMessageStreamResponse({ stream: toUIMessageStream(handle) });
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let tail = '';
  while (true) {
    const next = await reader.read();
    if (next.done) throw new Error('the resume stream ended before the ask');
    tail = (tail + decoder.decode(next.value, { stream: true })).slice(-200);
    if (tail.includes('tool-approval-request')) return reader;
  }
}

/** One mode, measured in this process (a child started with --expose-gc). */
export async function measureLiveReplay(mode: ReplayMode, streams: number): Promise<LiveReplayRow> {
  const text = Array.from({ length: deltaCount }, (_, index) => chunkOf(index));
  const runtime = createRuntime({
    model: scriptedModel([{ text, toolCalls: [{ name: 'saveNote', input: { title: 'x' } }] }]),
    tools: {
      saveNote: defineTool({
        description: 'Saves a note.',
        inputSchema: z.object({ title: z.string() }),
        permission: 'ask',
        execute: () => 'saved',
      }),
    },
    store: memoryStore(),
  });
  const before = gcHeap();
  const turn = await runtime.send({ sessionId: 'big', text: 'Write a long answer.' });
  let handle: TurnHandle = turn;
  if (mode === 'every delta kept') {
    const kept = everyDeltaKept(turn);
    handle = kept.handle;
    await kept.recorded;
  } else {
    for await (const event of turn.events) if (event.type === 'tool.permission.requested') break;
  }
  const handleBytes = gcHeap() - before;
  let replayItems = 0;
  const counting = handle.events[Symbol.asyncIterator]();
  for (let next = await counting.next(); !next.done; next = await counting.next()) {
    replayItems += 1;
    if (next.value.type === 'tool.permission.requested') break;
  }
  await counting.return?.();
  const beforeStreams = gcHeap();
  let peak = beforeStreams;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().heapUsed);
  }, 5);
  const open: ReadableStreamDefaultReader<Uint8Array>[] = [];
  const times: number[] = [];
  for (let index = 0; index < streams; index += 1) {
    const started = performance.now();
    open.push(await readToTail(handle));
    times.push(performance.now() - started);
    peak = Math.max(peak, process.memoryUsage().heapUsed);
  }
  clearInterval(sampler);
  const bytesPerStream = (gcHeap() - beforeStreams) / streams;
  for (const reader of open) await reader.cancel();
  await runtime.close();
  times.sort((a, b) => a - b);
  return {
    mode,
    deltas: deltaCount,
    textBytes: text.join('').length,
    streams,
    handleBytes,
    replayItems,
    bytesPerStream,
    peakBytes: peak - beforeStreams,
    replayMs: times[Math.floor(times.length / 2)] ?? 0,
  };
}

const run = promisify(execFile);

/** Both modes, each in a child process, in one run. */
export async function benchLiveReplay(streams = 40): Promise<LiveReplayRow[]> {
  const rows: LiveReplayRow[] = [];
  for (const mode of ['folded', 'every delta kept'] as const) {
    const { stdout } = await run(
      process.execPath,
      ['--expose-gc', fileURLToPath(import.meta.url), '--child', mode, String(streams)],
      { maxBuffer: 1024 * 1024 },
    );
    rows.push(JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}'));
  }
  return rows;
}

/** Below 64 KiB a stream's share is within the GC's noise (it may come out negative). */
const perStream = (bytes: number) => (bytes < 64 * 1024 ? '< 64 KiB (noise)' : formatBytes(bytes));

/** The two modes side by side, with the folded ÷ before ratio. */
export function liveReplayTable(rows: LiveReplayRow[]): BenchTable {
  const [folded, kept] = rows as [LiveReplayRow, LiveReplayRow];
  const ratio = (a: number, b: number) => (b === 0 ? '' : `${(a / b).toFixed(3)}×`);
  return {
    title: `A live run's replay: a ${formatBytes(folded.textBytes)} text in ${folded.deltas.toLocaleString('en')} deltas, ${folded.streams} resume streams held at the live tail`,
    columns: ['metric', 'folded', 'every delta kept (before)', 'folded ÷ before'],
    rows: [
      [
        'items a replay yields',
        String(folded.replayItems),
        String(kept.replayItems),
        ratio(folded.replayItems, kept.replayItems),
      ],
      [
        'heap held by the live run and its handle',
        formatBytes(folded.handleBytes),
        formatBytes(kept.handleBytes),
        ratio(folded.handleBytes, kept.handleBytes),
      ],
      [
        'heap per open resume stream (after GC)',
        perStream(folded.bytesPerStream),
        perStream(kept.bytesPerStream),
        folded.bytesPerStream < 64 * 1024 ? '' : ratio(folded.bytesPerStream, kept.bytesPerStream),
      ],
      [
        `peak heap while ${folded.streams} streams replayed`,
        formatBytes(folded.peakBytes),
        formatBytes(kept.peakBytes),
        ratio(folded.peakBytes, kept.peakBytes),
      ],
      [
        'one resume stream to the live tail (median)',
        formatMs(folded.replayMs),
        formatMs(kept.replayMs),
        ratio(folded.replayMs, kept.replayMs),
      ],
    ],
  };
}

if (import.meta.main) {
  const [flag, mode, streams] = process.argv.slice(2);
  if (flag === '--child') {
    const row = await measureLiveReplay(mode as ReplayMode, Number(streams));
    process.stdout.write(`${JSON.stringify(row)}\n`);
  } else {
    const { formatTable } = await import('./table.ts');
    const count = Number(process.env.LIVE_REPLAY_STREAMS ?? 40);
    console.log(formatTable(liveReplayTable(await benchLiveReplay(count))));
  }
}
