import {
  experimental_streamLanguageModelCall,
  jsonSchema,
  type ModelMessage,
  stepCountIs,
  streamText,
} from 'ai';
import { aiSdkAdapter } from '../adapters/ai-sdk-adapter.ts';
import { type ScriptedResponse, scriptedModel } from '../adapters/scripted-model.ts';
import { addTool, conversationStep } from './conversation.ts';
import { interleave, median } from './stats.ts';
import { type BenchTable, formatMs } from './table.ts';

/** Options of {@link benchAdapter}. */
export interface AdapterBenchOptions {
  /** Stream chunks of the long request: half text deltas, half tool-argument deltas. */
  chunks?: number;
  /** Measured repetitions of each side, interleaved. */
  repetitions?: number;
  /** Unmeasured repetitions first, so every side runs warm. */
  warmup?: number;
}

/** One model call through the AI SDK, the two ways an adapter can make it (medians, ms). */
export interface ModelCallRow {
  response: string;
  /** `streamText` held to one step, no retries, its full stream read. */
  streamTextMs: number;
  /** `experimental_streamLanguageModelCall`, its stream read. */
  modelCallMs: number;
}

/** Medians in milliseconds and their ratio (adapter ÷ plain streamText). */
export interface AdapterBenchResult {
  chunks: number;
  repetitions: number;
  adapterMs: number;
  streamTextMs: number;
  ratio: number;
  calls: ModelCallRow[];
}

const schemaTool = {
  description: 'Records values',
  inputSchema: jsonSchema({ type: 'object' }),
};

/**
 * Times `aiSdkAdapter(model).step()` (events read, completion awaited) against consuming the
 * same long scripted stream with plain `streamText`; and one model call made with `streamText`
 * held to one step against `experimental_streamLanguageModelCall`, on a short response (a step
 * of the benchmark conversation) and on the long stream. Interleaved repetitions, medians.
 */
export async function benchAdapter(options: AdapterBenchOptions = {}): Promise<AdapterBenchResult> {
  const chunks = options.chunks ?? 2000;
  const repetitions = options.repetitions ?? 21;
  const long = scriptFor(chunks);
  const short = conversationStep(5, 20);
  const tools = [
    { name: 'record', description: 'Records values', inputSchema: { type: 'object' } },
  ];
  const messages = [{ role: 'user' as const, content: 'Record the values.' }];
  const sdkMessages: ModelMessage[] = messages;
  const sdkTools = { record: schemaTool, [addTool.name]: schemaTool };

  const viaAdapter = async () => {
    const step = aiSdkAdapter(scriptedModel([long])).step({
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
  const viaStreamText = async (script: ScriptedResponse, oneStep: boolean) => {
    const result = streamText({
      model: scriptedModel([script]),
      messages: sdkMessages,
      tools: sdkTools,
      maxRetries: 0,
      ...(oneStep ? { stopWhen: stepCountIs(1) } : {}),
    });
    for await (const _part of result.fullStream);
  };
  const viaModelCall = async (script: ScriptedResponse) => {
    const { stream } = await experimental_streamLanguageModelCall({
      model: scriptedModel([script]),
      messages: sdkMessages,
      tools: sdkTools,
    });
    for await (const _part of stream);
  };

  const samples = await interleave({
    rounds: repetitions,
    warmup: options.warmup ?? 5,
    sides: {
      adapter: viaAdapter,
      streamText: () => viaStreamText(long, false),
      shortStreamText: () => viaStreamText(short, true),
      shortModelCall: () => viaModelCall(short),
      longStreamText: () => viaStreamText(long, true),
      longModelCall: () => viaModelCall(long),
    },
  });
  const adapterMs = median(samples.adapter);
  const streamTextMs = median(samples.streamText);
  return {
    chunks,
    repetitions,
    adapterMs,
    streamTextMs,
    ratio: adapterMs / streamTextMs,
    calls: [
      {
        response: 'a step of the benchmark conversation (2 text deltas, 1 call)',
        streamTextMs: median(samples.shortStreamText),
        modelCallMs: median(samples.shortModelCall),
      },
      {
        response: `${chunks} chunks`,
        streamTextMs: median(samples.longStreamText),
        modelCallMs: median(samples.longModelCall),
      },
    ],
  };
}

/** The result as two tables' worth of rows: the adapter's target, and the one-call comparison. */
export function adapterTable(result: AdapterBenchResult): BenchTable {
  return {
    title: `Model adapter vs plain streamText, and one model call: streamText vs experimental_streamLanguageModelCall`,
    columns: ['what', 'side', 'median', 'ratio', 'target'],
    rows: [
      [
        `one request of ${result.chunks} chunks`,
        'plain streamText',
        formatMs(result.streamTextMs),
        '1.00×',
        '',
      ],
      [
        '',
        'aiSdkAdapter(model).step()',
        formatMs(result.adapterMs),
        `${result.ratio.toFixed(2)}×`,
        `≤ 1.2×: ${result.ratio <= 1.2 ? 'met' : 'MISSED'}`,
      ],
      ...result.calls.flatMap((call) => [
        [
          `one model call: ${call.response}`,
          'streamText, one step',
          formatMs(call.streamTextMs),
          '1.00×',
          '',
        ],
        [
          '',
          'experimental_streamLanguageModelCall',
          formatMs(call.modelCallMs),
          `${(call.modelCallMs / call.streamTextMs).toFixed(2)}×`,
          '',
        ],
      ]),
    ],
    notes: [
      `medians of ${result.repetitions} interleaved repetitions after warm-up; the adapter makes its one call with experimental_streamLanguageModelCall`,
      'one model call: the same scripted model, messages and schema-only tools; streamText with maxRetries: 0 and stopWhen: stepCountIs(1), its fullStream read; the model call its stream read',
    ],
  };
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

if (import.meta.main) {
  const { formatTable } = await import('./table.ts');
  console.log(formatTable(adapterTable(await benchAdapter())));
}
