import type { LanguageModelV4Message, LanguageModelV4Prompt } from '@ai-sdk/provider';
import { convertToLanguageModelPrompt, standardizePrompt } from 'ai/internal';
import type { ModelMessage } from '../events/messages.ts';
import { toAiSdkMessage, toAiSdkMessages } from './message-conversion.ts';
import { samePrefixLength } from './same-prefix.ts';

/** What one model's prompt needs from it: the URLs it reads itself, its provider's name. */
export interface PromptTarget {
  supportedUrls: Record<string, RegExp[]>;
  /** The provider name's first segment (`openai` of `openai.responses`), as the SDK passes it. */
  provider: string;
}

/** The last list converted that began with a given message object, and its converted messages. */
interface Converted {
  messages: ModelMessage[];
  prompt: LanguageModelV4Message[];
}

/**
 * The provider prompt (`LanguageModelV4Prompt`) of a request, built by the AI SDK's own converter
 * (`convertToLanguageModelPrompt` of `ai/internal`, the function `streamText` and
 * `experimental_streamLanguageModelCall` call) and converted once per message: a request that
 * starts with the previous request's message objects (a run's history hands them on, unchanged)
 * converts only the messages it adds and reuses the rest.
 *
 * Converting the added messages on their own gives what converting the whole list gives when the
 * SDK's conversion does not reach across the cut, which holds here: the previous list converted
 * without `MissingToolResultsError`, so it leaves no tool call waiting for its result; a message
 * is converted by itself (its downloads, its parts); and the only step that joins messages, two
 * tool messages in a row merged into one, cannot happen when the first added message is not a
 * tool message. When it is, or when the list is not the previous one plus messages at the end,
 * the whole list is converted, as the SDK does. The converted messages are frozen, since later
 * requests share them: a middleware that edits the prompt must copy what it changes.
 * test/adapters/language-model-prompt.test.ts checks every prompt against the SDK's conversion
 * of the whole list.
 */
export function createPromptConverter(): (request: {
  system: string | undefined;
  messages: readonly ModelMessage[];
  target: PromptTarget;
  abortSignal: AbortSignal;
}) => Promise<LanguageModelV4Prompt> {
  let converted = new WeakMap<ModelMessage, Converted>();
  // The prompt depends on the model's supported URLs and provider: one cache per target.
  let target: PromptTarget | undefined;

  const convert = (
    system: string | undefined,
    messages: ReturnType<typeof toAiSdkMessages>,
    request: { target: PromptTarget; abortSignal: AbortSignal },
  ) =>
    convertToLanguageModelPrompt({
      prompt: { instructions: system, messages },
      supportedUrls: request.target.supportedUrls,
      download: undefined,
      abortSignal: request.abortSignal,
      provider: request.target.provider,
    });

  return async (request) => {
    const { system, messages } = request;
    if (
      target === undefined ||
      target.provider !== request.target.provider ||
      target.supportedUrls !== request.target.supportedUrls
    ) {
      target = request.target;
      converted = new WeakMap();
    }
    const first = messages[0];
    let last = first === undefined ? undefined : converted.get(first);
    // One pointer scan of the list; only the messages after the kept ones are converted (to AI
    // SDK messages, then to the prompt), so no step copies or converts the whole list.
    const kept = last === undefined ? 0 : samePrefixLength(messages, last.messages);
    if (last === undefined || kept < last.messages.length || messages[kept]?.role === 'tool') {
      last = { messages: [], prompt: [] };
    }
    const from = last.messages.length;
    const tail: ModelMessage[] = [];
    for (let index = from; index < messages.length; index += 1) {
      tail.push(messages[index] as ModelMessage);
    }
    const added = tail.map(toAiSdkMessage);
    if (from === 0) {
      // A list converted from its start: the SDK's own checks of the whole prompt (an empty
      // list is an error), as it makes them. A list that goes on from one converted passed them.
      await standardizePrompt({
        instructions: system,
        messages: added,
        allowSystemInMessages: true,
      });
      converted.set(first as ModelMessage, last);
    }
    const instructions = system === undefined ? [] : await convert(system, [], request);
    // The cached lists grow in place; each request gets its own copy below.
    if (tail.length > 0) {
      const prompt = await convert(undefined, added, request);
      if (converted.get(first as ModelMessage) !== last || last.messages.length !== from) {
        // A concurrent request changed the cache meanwhile: this one converts its whole list.
        return convert(system, toAiSdkMessages(messages), request);
      }
      for (const message of tail) last.messages.push(message);
      for (const message of prompt) last.prompt.push(deepFreeze(message));
    }
    const prompt = last.prompt;
    return instructions.length === 0 ? prompt.slice() : instructions.concat(prompt);
  };
}

/** Freezes plain objects and arrays all the way down (binary data and URLs are left as they are). */
function deepFreeze<TValue>(value: TValue): TValue {
  if (typeof value !== 'object' || value === null || Object.isFrozen(value)) return value;
  const prototype = Object.getPrototypeOf(value);
  if (!Array.isArray(value) && prototype !== Object.prototype && prototype !== null) return value;
  for (const item of Object.values(value)) deepFreeze(item);
  return Object.freeze(value);
}
