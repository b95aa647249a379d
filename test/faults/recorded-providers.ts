import { createAnthropic } from '@ai-sdk/anthropic';
import { createCohere } from '@ai-sdk/cohere';
import { createDeepSeek } from '@ai-sdk/deepseek';
import { createGoogleGenerativeAI } from '@ai-sdk/google';
import { createGroq } from '@ai-sdk/groq';
import { createMistral } from '@ai-sdk/mistral';
import { createOpenResponses } from '@ai-sdk/open-responses';
import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { createXai } from '@ai-sdk/xai';
import type { AiSdkLanguageModel } from '../../adapters/ai-sdk-adapter.ts';
import { loadFixture, splitOpenAIResponses } from '../helpers/fake-fetch.ts';

/**
 * Every provider package the cut-off campaign replays, each with its recordings (copies of the
 * AI SDK repository's own `__fixtures__`, see test/fixtures/provider-streams/README.md) and the
 * line of a recording that carries the provider's finish: a body cut before that line is a cut
 * answer, a body cut after it has everything the provider meant to say.
 */

/** One provider package (and API) on a fake `fetch`. */
export interface RecordedProvider {
  name: string;
  model(fetch: typeof globalThis.fetch): AiSdkLanguageModel;
  /** Recordings served as SSE, one `data:` frame per line. */
  recordings: { name: string; lines: readonly string[] }[];
  /** Whether the provider's real streams end with `data: [DONE]`. */
  done: boolean;
  /** True for the line whose arrival gives the provider package its finish. */
  isFinish(line: string): boolean;
}

// biome-ignore lint/suspicious/noExplicitAny: recorded provider JSON is read ad hoc
const json = (line: string) => JSON.parse(line) as Record<string, any>;
const chatFinish = (line: string) => json(line).choices?.[0]?.finish_reason != null;
const responsesFinish = (line: string) =>
  ['response.completed', 'response.incomplete'].includes(json(line).type);
const apiKey = 'test';
const recording = (name: string) => ({ name, lines: loadFixture(name) });

/** Ten provider packages, eleven wire formats. */
export const recordedProviders: RecordedProvider[] = [
  {
    name: '@ai-sdk/anthropic',
    model: (fetch) => createAnthropic({ apiKey, fetch })('claude-test'),
    recordings: [
      recording('anthropic-text'),
      recording('anthropic-tool-no-args'),
      recording('anthropic-json-tool'),
    ],
    done: false,
    isFinish: (line) => json(line).type === 'message_stop',
  },
  {
    name: '@ai-sdk/cohere',
    model: (fetch) => createCohere({ apiKey, fetch })('command-test'),
    recordings: [recording('cohere-text'), recording('cohere-tool-call')],
    done: false,
    isFinish: (line) => json(line).type === 'message-end',
  },
  {
    name: '@ai-sdk/deepseek',
    model: (fetch) => createDeepSeek({ apiKey, fetch })('deepseek-chat'),
    recordings: [recording('deepseek-tool-call')],
    done: true,
    isFinish: chatFinish,
  },
  {
    name: '@ai-sdk/groq',
    model: (fetch) => createGroq({ apiKey, fetch })('llama-test'),
    recordings: [recording('groq-tool-call')],
    done: true,
    isFinish: chatFinish,
  },
  {
    name: '@ai-sdk/mistral',
    model: (fetch) => createMistral({ apiKey, fetch })('mistral-test'),
    recordings: [
      recording('mistral-text'),
      recording('mistral-tool-call'),
      recording('mistral-incremental-tool-call'),
    ],
    done: true,
    isFinish: chatFinish,
  },
  {
    name: '@ai-sdk/openai-compatible',
    model: (fetch) =>
      createOpenAICompatible({ name: 'compatible', baseURL: 'https://api.example.test/v1', fetch })(
        'compatible-test',
      ),
    // A Chat Completions recording of DeepSeek (the xAI one in provider-streams/ is 229 lines,
    // which cut after every line would take most of the campaign's time).
    recordings: [recording('deepseek-tool-call'), recording('groq-tool-call')],
    done: true,
    isFinish: chatFinish,
  },
  {
    name: '@ai-sdk/open-responses',
    model: (fetch) =>
      createOpenResponses({
        name: 'lmstudio',
        url: 'https://api.example.test/v1/responses',
        fetch,
      })('open-test'),
    recordings: [recording('open-responses-tool-call')],
    done: false,
    isFinish: responsesFinish,
  },
  {
    name: '@ai-sdk/xai',
    model: (fetch) => createXai({ apiKey, fetch })('grok-test'),
    recordings: [recording('xai-image-generation-tool')],
    done: false,
    isFinish: responsesFinish,
  },
  {
    name: '@ai-sdk/openai (Responses)',
    model: (fetch) => createOpenAI({ apiKey, fetch })('gpt-test'),
    recordings: [
      {
        name: 'openai-responses-reasoning-tool-calls (first response)',
        lines: splitOpenAIResponses(loadFixture('openai-responses-reasoning-tool-calls'))[0] ?? [],
      },
    ],
    done: true,
    isFinish: responsesFinish,
  },
  {
    name: '@ai-sdk/openai (Chat Completions)',
    model: (fetch) => createOpenAI({ apiKey, fetch }).chat('gpt-test'),
    recordings: [recording('deepseek-tool-call')],
    done: true,
    isFinish: chatFinish,
  },
  {
    name: '@ai-sdk/google',
    model: (fetch) => createGoogleGenerativeAI({ apiKey, fetch })('gemini-test'),
    recordings: [recording('google-text'), recording('google-stream-tool-call-arguments')],
    done: false,
    isFinish: (line) => json(line).candidates?.[0]?.finishReason != null,
  },
];
