import { createGoogleGenerativeAI } from '@ai-sdk/google';
import { createOpenAI } from '@ai-sdk/openai';
import { vi } from 'vitest';
import { z } from 'zod';
import type { AiSdkLanguageModel } from '../../adapters/ai-sdk-adapter.ts';
import { assertNever, type Fact } from '../../events/facts.ts';
import type { JsonValue } from '../../events/json.ts';
import type { TurnEvent, TurnHandle, TurnResult } from '../../machines/turn-channel.ts';
import { memoryStore } from '../../store/memory-store.ts';
import { defineTool } from '../../tools/define-tool.ts';
import {
  chatFinishReason,
  chatToolArgumentDeltas,
  createFakeFetch,
  type FakeFetch,
  type FakeResponse,
  geminiFinishReason,
  googleError,
  loadFixture,
  openaiError,
  openaiIncomplete,
  type StreamFault,
  splitOpenAIResponses,
} from '../helpers/fake-fetch.ts';
import { testRuntime } from '../runtime/runtime-helpers.ts';

/**
 * Fault scenarios through the real provider packages: a runtime on `memoryStore`, a real
 * `@ai-sdk/openai` or `@ai-sdk/google` model whose `fetch` is scripted, and tools that count
 * their executions. Each provider is a profile of recorded streams and the points where a
 * fault cuts them, so one scenario runs against all three wire formats.
 */

export type ProviderName = 'openai-responses' | 'openai-chat' | 'google';

/** One recorded SSE response: its JSON lines and whether it ends with `data: [DONE]`. */
export interface Recording {
  lines: readonly string[];
  done: boolean;
}

export interface ProviderProfile {
  name: ProviderName;
  /** A real provider model object whose requests go to `fetch`. */
  model(fetch: typeof globalThis.fetch): AiSdkLanguageModel;
  /** A response whose tool calls stream their arguments and are proven (`raw-bytes`). */
  toolCall: Recording;
  /** The calls `toolCall` proves, in order, as the tools receive them. */
  calls: { name: ToolName; input: JsonValue }[];
  /** A final plain-text answer. */
  text: Recording;
  /** Frames of `text` after which some text has streamed and the response has not finished. */
  textCut: number;
  /** Frames of `toolCall` after which some argument bytes (and no text) have streamed. */
  argumentCut: number;
  /** The argument bytes that reach the model's stream when `toolCall` resets at `argumentCut`. */
  argumentBytes: string;
  /** Frames of `toolCall` after which its first call's arguments are complete, before the finish. */
  callCompleteCut: number;
  /** An HTTP error in the provider's own body shape; `retryAfterSeconds` the way it says it. */
  httpError(status: number, options?: { retryAfterSeconds?: number }): FakeResponse;
  /** The recording finishing on the output-token limit, in the provider's own words. */
  cutOff(recording: Recording): Recording;
  /** The provider's raw finish reason for that cut-off. */
  cutOffReason: string;
  /** The output tokens `toolCall` reports. */
  toolCallOutputTokens: number;
  /** How the provider's request body carries an output-token limit. */
  maxOutputTokensBody(limit: number): object;
}

const responsesFixture = splitOpenAIResponses(loadFixture('openai-responses-reasoning-tool-calls'));

const errorStatus: Record<number, string> = {
  401: 'UNAUTHENTICATED',
  429: 'RESOURCE_EXHAUSTED',
  500: 'INTERNAL',
  503: 'UNAVAILABLE',
};

const errorMessages: Record<number, string> = {
  401: 'Incorrect API key provided: sk-proj-abcdefghijklmnop1234.',
  429: 'Rate limit reached for requests',
  500: 'The server had an error while processing your request.',
  503: 'The engine is currently overloaded, please try again later.',
};

function openaiHttpError(status: number, options: { retryAfterSeconds?: number } = {}) {
  return openaiError(
    status,
    {
      message: errorMessages[status] ?? `HTTP ${status}`,
      type: status === 429 ? 'requests' : 'server_error',
    },
    options.retryAfterSeconds === undefined
      ? undefined
      : { 'retry-after': String(options.retryAfterSeconds) },
  );
}

/** The three wire formats the faults run against. */
export const providers: ProviderProfile[] = [
  {
    name: 'openai-responses',
    model: (fetch) => createOpenAI({ apiKey: 'test', fetch })('gpt-test'),
    toolCall: { lines: responsesFixture[0] ?? [], done: true },
    calls: [{ name: 'calculator', input: { a: 12, b: 7, op: 'add' } }],
    text: { lines: responsesFixture[3] ?? [], done: true },
    textCut: 8,
    argumentCut: 45,
    argumentBytes: '{"a":12,"',
    callCompleteCut: 55,
    httpError: openaiHttpError,
    cutOff: (recording) => ({ ...recording, lines: openaiIncomplete(recording.lines) }),
    cutOffReason: 'max_output_tokens',
    toolCallOutputTokens: 28,
    maxOutputTokensBody: (limit) => ({ max_output_tokens: limit }),
  },
  {
    name: 'openai-chat',
    model: (fetch) => createOpenAI({ apiKey: 'test', fetch }).chat('gpt-test'),
    toolCall: {
      lines: chatToolArgumentDeltas(loadFixture('openai-compatible-chat-tool-call')),
      done: true,
    },
    calls: [{ name: 'weather', input: { location: 'San Francisco' } }],
    text: { lines: loadFixture('openai-chat-text'), done: true },
    textCut: 10,
    argumentCut: 231,
    argumentBytes: '{"location":"San Fran',
    callCompleteCut: 232,
    httpError: openaiHttpError,
    cutOff: (recording) => ({ ...recording, lines: chatFinishReason(recording.lines, 'length') }),
    cutOffReason: 'length',
    toolCallOutputTokens: 26,
    maxOutputTokensBody: (limit) => ({ max_tokens: limit }),
  },
  {
    name: 'google',
    model: (fetch) => {
      let counter = 0;
      return createGoogleGenerativeAI({
        apiKey: 'test',
        fetch,
        generateId: () => `gen_${++counter}`,
      })('gemini-3-flash-preview');
    },
    toolCall: { lines: loadFixture('google-stream-tool-call-arguments'), done: false },
    calls: [
      { name: 'getWeather', input: { location: 'Boston' } },
      { name: 'getWeather', input: { location: 'San Francisco' } },
    ],
    text: { lines: loadFixture('google-text'), done: false },
    textCut: 2,
    argumentCut: 2,
    argumentBytes: '{"location":"Boston',
    callCompleteCut: 4,
    httpError: (status, options = {}) =>
      googleError(status, {
        message: errorMessages[status] ?? `HTTP ${status}`,
        status: errorStatus[status] ?? 'UNKNOWN',
        ...(options.retryAfterSeconds === undefined
          ? {}
          : { retryDelay: `${options.retryAfterSeconds}s` }),
      }),
    cutOff: (recording) => ({
      ...recording,
      lines: geminiFinishReason(recording.lines, 'MAX_TOKENS'),
    }),
    cutOffReason: 'MAX_TOKENS',
    toolCallOutputTokens: 155,
    maxOutputTokensBody: (limit) => ({ generationConfig: { maxOutputTokens: limit } }),
  },
];

/** The trace lines of `profile`'s proven calls settling: each allowed, started, succeeded. */
export function settledCalls(profile: ProviderProfile): string[] {
  return [
    ...profile.calls.map((call) => `tool.permission.decided ${call.name} allow by policy`),
    ...profile.calls.map((call) => `tool.started ${call.name}`),
    ...profile.calls.map((call) => `tool.settled ${call.name} success`),
  ];
}

/** A recording served whole, or cut by `fault`. */
export function serve(recording: Recording, fault?: StreamFault): FakeResponse {
  return { kind: 'sse', lines: recording.lines, done: recording.done, ...(fault ? { fault } : {}) };
}

type ToolName = 'calculator' | 'weather' | 'getWeather';

/** The fixtures' tools; each records every execution. */
export function countedTools() {
  const executions: { name: ToolName; input: JsonValue }[] = [];
  const record = (name: ToolName) => (input: JsonValue) => {
    executions.push({ name, input });
    return `${name} ran`;
  };
  const location = z.object({ location: z.string() });
  const tools = {
    calculator: defineTool({
      description: 'Calculates a op b.',
      inputSchema: z.object({ a: z.number(), b: z.number(), op: z.string() }),
      execute: record('calculator'),
    }),
    weather: defineTool({
      description: 'The weather in a city.',
      inputSchema: location,
      execute: record('weather'),
    }),
    getWeather: defineTool({
      description: 'The weather in a city.',
      inputSchema: location,
      execute: record('getWeather'),
    }),
  };
  return { tools, executions };
}

/** A runtime on `memoryStore` whose model is `profile`'s provider answering `responses` in order. */
export function faultRuntime(profile: ProviderProfile, responses: readonly FakeResponse[]) {
  const fake: FakeFetch = createFakeFetch(responses);
  const { tools, executions } = countedTools();
  const runtime = testRuntime(memoryStore(), { model: profile.model(fake.fetch), tools });
  return { runtime, fake, executions };
}

/**
 * Every string in a request body, including the strings inside strings that hold JSON (providers
 * wrap some tool results as JSON text), so a test can find what the model was told.
 */
export function bodyStrings(value: unknown): string[] {
  if (typeof value === 'string') {
    try {
      return [value, ...bodyStrings(JSON.parse(value))];
    } catch {
      return [value];
    }
  }
  if (typeof value !== 'object' || value === null) return [];
  return Object.values(value).flatMap(bodyStrings);
}

/** Collects a turn's events as they arrive, so a test can wait for one while timers are fake. */
export function watch(turn: TurnHandle) {
  const events: TurnEvent[] = [];
  const listeners = new Set<() => void>();
  let ended = false;
  (async () => {
    for await (const event of turn.events) {
      events.push(event);
      for (const listener of listeners) listener();
    }
    ended = true;
    for (const listener of listeners) listener();
  })();
  const find = (type: TurnEvent['type'], count: number) =>
    events.filter((event) => event.type === type)[count - 1];
  return {
    events,
    /** Facts seen so far, in order. */
    facts: () => events.filter((event): event is Fact => 'seq' in event),
    /** Resolves with the `count`-th event of `type` (no timer needed to reach it). */
    next(type: TurnEvent['type'], count = 1): Promise<TurnEvent> {
      return new Promise((resolve, reject) => {
        const check = () => {
          const event = find(type, count);
          if (event !== undefined) {
            listeners.delete(check);
            resolve(event);
          } else if (ended) {
            listeners.delete(check);
            reject(new Error(`the run ended without ${type} #${count}`));
          }
        };
        listeners.add(check);
        check();
      });
    },
    has: (type: TurnEvent['type'], count = 1) => find(type, count) !== undefined,
  };
}

/**
 * Advances fake timers in `stepMs` steps until the turn is done (the AI SDK, streams and the
 * store settle in microtasks between steps). Fails instead of spinning past `maxMs`.
 */
export async function finishWithFakeTimers(
  turn: TurnHandle,
  { stepMs = 50, maxMs = 120_000 } = {},
): Promise<TurnResult> {
  let result: TurnResult | undefined;
  let failure: unknown;
  turn.done.then(
    (value) => {
      result = value;
    },
    (error: unknown) => {
      failure = error;
    },
  );
  for (let elapsed = 0; result === undefined; elapsed += stepMs) {
    if (failure !== undefined) throw failure;
    if (elapsed > maxMs) throw new Error(`the turn did not end within ${maxMs} ms of fake time`);
    await vi.advanceTimersByTimeAsync(stepMs);
  }
  return result;
}

/**
 * The run's facts as one line each, with what the fault tests assert: attempts, failure kinds,
 * retries, calls and their proofs, tool settlements (by tool name), the end. Exact, so any extra
 * or missing fact fails the test.
 */
export function trace(facts: readonly Fact[]): string[] {
  const names = new Map<string, string>();
  return facts.map((fact) => {
    switch (fact.type) {
      case 'step.started':
        return `step.started ${fact.stepId} attempt ${fact.attempt}`;
      case 'step.failed': {
        const { kind, retryable, status, retryAfterMs } = fact.error;
        return [
          `step.failed ${fact.stepId} ${kind}`,
          retryable ? 'retryable' : 'final',
          fact.observedOutput ? 'after output' : 'before output',
          ...(status === undefined ? [] : [`status ${status}`]),
          ...(retryAfterMs === undefined ? [] : [`retry after ${retryAfterMs} ms`]),
        ].join(', ');
      }
      case 'retry.due':
        return `retry.due ${fact.stepId} attempt ${fact.attempt}`;
      case 'step.completed': {
        for (const call of fact.toolCalls) names.set(call.callId, call.name);
        const calls = fact.toolCalls.map((call) => `${call.name}:${call.proof ?? 'withheld'}`);
        const listed = calls.length > 0 ? ` [${calls.join(' ')}]` : '';
        return `step.completed ${fact.stepId} ${fact.finishReason.unified}${listed}`;
      }
      case 'tool.permission.decided':
        return `tool.permission.decided ${names.get(fact.callId)} ${fact.decision} by ${fact.by}`;
      case 'tool.permission.requested':
      case 'tool.started':
      case 'tool.indeterminate':
        return `${fact.type} ${fact.name}`;
      case 'tool.settled':
        return `tool.settled ${fact.name} ${fact.outcome}`;
      case 'run.ended':
        return `run.ended ${fact.status} ${fact.reason}`;
      case 'run.started':
      case 'steering.received':
      case 'compaction.started':
      case 'compaction.completed':
      case 'compaction.failed':
      case 'run.stop.requested':
      case 'run.recovered':
        return fact.type;
      default:
        return assertNever(fact, 'fact');
    }
  });
}
