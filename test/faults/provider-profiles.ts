import { createGoogleGenerativeAI } from '@ai-sdk/google';
import { createOpenAI } from '@ai-sdk/openai';
import type { AiSdkLanguageModel } from '../../adapters/ai-sdk-adapter.ts';
import type { JsonValue } from '../../events/json.ts';
import {
  chatFinishReason,
  chatToolArgumentDeltas,
  type FakeResponse,
  geminiFinishReason,
  googleError,
  loadFixture,
  openaiError,
  openaiIncomplete,
  type StreamFault,
  splitOpenAIResponses,
} from '../helpers/fake-fetch.ts';

/**
 * The wire formats the fault scenarios run against, each a profile of recorded streams (from
 * test/fixtures/provider-streams) and the points where a fault cuts them, so one scenario runs
 * against all three.
 */

/** A provider package and API: OpenAI Responses, OpenAI Chat Completions, Gemini. */
export type ProviderName = 'openai-responses' | 'openai-chat' | 'google';

/** The tools the recordings call. */
export type ToolName = 'calculator' | 'weather' | 'getWeather';

/** One recorded SSE response: its JSON lines and whether it ends with `data: [DONE]`. */
export interface Recording {
  lines: readonly string[];
  done: boolean;
}

/** One provider: how to build its model on a fake fetch, its recordings, and its fault points. */
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
