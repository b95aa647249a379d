import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { jsonSchema, streamText } from 'ai';
import { aiSdkAdapter } from '../adapters/ai-sdk-adapter.ts';
import { type ScriptedResponse, scriptedModel } from '../adapters/scripted-model.ts';
import { median } from './stats.ts';

/** Options of {@link benchAdapter}. */
export interface AdapterBenchOptions {
  /** Stream chunks per request: half text deltas, half tool-argument deltas. */
  chunks?: number;
  /** Measured repetitions of each side, interleaved. */
  repetitions?: number;
  /** Unmeasured repetitions first, so both sides run warm. */
  warmup?: number;
}

/** Medians in milliseconds and their ratio (adapter ÷ plain streamText). */
export interface AdapterBenchResult {
  chunks: number;
  repetitions: number;
  adapterMs: number;
  streamTextMs: number;
  ratio: number;
}

/**
 * Times `aiSdkAdapter(model).step()` (events read, completion awaited) against consuming the
 * same scripted stream with plain `streamText`, in interleaved repetitions, and reports medians.
 */
export async function benchAdapter(options: AdapterBenchOptions = {}): Promise<AdapterBenchResult> {
  const chunks = options.chunks ?? 2000;
  const repetitions = options.repetitions ?? 21;
  const warmup = options.warmup ?? 5;
  const script = scriptFor(chunks);
  const tools = [
    { name: 'record', description: 'Records values', inputSchema: { type: 'object' } },
  ];
  const messages = [{ role: 'user' as const, content: 'Record the values.' }];

  const viaAdapter = async () => {
    const step = aiSdkAdapter(scriptedModel([script])).step({
      messages,
      tools,
      abortSignal: new AbortController().signal,
    });
    for await (const _event of step.events);
    const completion = await step.completion;
    if (completion.type !== 'step.completed' || completion.toolCalls[0]?.proof !== 'raw-bytes') {
      throw new Error(
        `benchAdapter: unexpected completion ${JSON.stringify(completion).slice(0, 200)}`,
      );
    }
  };
  const viaStreamText = async () => {
    const result = streamText({
      model: scriptedModel([script]),
      messages,
      tools: {
        record: { description: 'Records values', inputSchema: jsonSchema({ type: 'object' }) },
      },
      maxRetries: 0,
    });
    for await (const _part of result.fullStream);
  };

  const adapterTimes: number[] = [];
  const streamTextTimes: number[] = [];
  for (let round = 0; round < warmup + repetitions; round += 1) {
    // Alternate which side goes first, so neither always runs on a warmer heap.
    const order = round % 2 === 0 ? [viaAdapter, viaStreamText] : [viaStreamText, viaAdapter];
    for (const run of order) {
      const started = performance.now();
      await run();
      const elapsed = performance.now() - started;
      if (round >= warmup) (run === viaAdapter ? adapterTimes : streamTextTimes).push(elapsed);
    }
  }
  const adapterMs = median(adapterTimes);
  const streamTextMs = median(streamTextTimes);
  return { chunks, repetitions, adapterMs, streamTextMs, ratio: adapterMs / streamTextMs };
}

function scriptFor(chunks: number): ScriptedResponse {
  const textChunks = Math.ceil(chunks / 2);
  const argumentChunks = chunks - textChunks;
  const values = Array.from({ length: argumentChunks }, (_, index) => index);
  const argumentsText = JSON.stringify({ values });
  const size = Math.ceil(argumentsText.length / argumentChunks);
  const deltas = Array.from({ length: argumentChunks }, (_, index) =>
    argumentsText.slice(index * size, (index + 1) * size),
  ).filter((delta) => delta.length > 0);
  return {
    text: Array.from({ length: textChunks }, (_, index) => `word${index} `),
    toolCalls: [{ name: 'record', deltas, input: { values } }],
    usage: { inputTokens: 10, outputTokens: chunks },
  };
}

/** Prints the benchmark result in one line. */
export function formatAdapterBench(result: AdapterBenchResult): string {
  return `adapter ${result.adapterMs.toFixed(2)} ms vs streamText ${result.streamTextMs.toFixed(2)} ms over ${result.chunks} chunks (median of ${result.repetitions} interleaved runs): ratio ${result.ratio.toFixed(2)}× (target ≤ 1.2×)`;
}

if (
  process.argv[1] !== undefined &&
  realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)
) {
  console.log(formatAdapterBench(await benchAdapter()));
}
