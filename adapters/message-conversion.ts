import {
  type ModelMessage as AiSdkMessage,
  type UserContent as AiSdkUserContent,
  type AssistantContent,
  jsonSchema,
  type ToolContent,
  type ToolSet,
} from 'ai';
import { assertNever } from '../events/facts.ts';
import type { JsonValue, ProviderOptions } from '../events/json.ts';
import type {
  AssistantPart,
  ModelMessage,
  RequestTool,
  ToolResultPart,
  UserPart,
} from '../events/messages.ts';
import { samePrefixLength } from './same-prefix.ts';

/** The last list converted that began with a given message object, and its conversion. */
interface Converted {
  messages: ModelMessage[];
  converted: AiSdkMessage[];
}

// A run's history hands the previous request's message objects to the next request: what a
// list shares with the last one converted (by object) is not converted again.
const byFirstMessage = new WeakMap<ModelMessage, Converted>();

/**
 * Converts turnlog messages to AI SDK messages. Every part keeps its provider options
 * (reasoning signatures, OpenAI `itemId`/`reasoningEncryptedContent`, Gemini thought signatures),
 * tool calls keep their ids, and a tool result is text (`error-text` when `isError`). A provider
 * tool's call and result go back as the SDK's provider-executed `tool-call` and its `tool-result`
 * (JSON) in the assistant message, which the provider package turns into its own blocks.
 * Messages a list shares with the previous list converted (the same objects, in the same places)
 * give the same AI SDK messages: only the others are converted (messages do not change once built).
 */
export function toAiSdkMessages(messages: readonly ModelMessage[]): AiSdkMessage[] {
  const [first] = messages;
  if (first === undefined) return [];
  let last = byFirstMessage.get(first);
  if (last === undefined) {
    last = { messages: [], converted: [] };
    byFirstMessage.set(first, last);
  }
  const kept = samePrefixLength(messages, last.messages);
  last.messages.length = kept;
  last.converted.length = kept;
  for (let index = kept; index < messages.length; index += 1) {
    const message = messages[index] as ModelMessage;
    last.messages.push(message);
    last.converted.push(toAiSdkMessage(message));
  }
  return [...last.converted];
}

/** One turnlog message as an AI SDK message (no cache: {@link toAiSdkMessages} keeps one). */
export function toAiSdkMessage(message: ModelMessage): AiSdkMessage {
  switch (message.role) {
    case 'system':
      return { role: 'system', content: message.content };
    case 'user':
      return { role: 'user', content: message.content };
    case 'assistant':
      return { role: 'assistant', content: message.content.map(toAiSdkAssistantPart) };
    case 'tool':
      return { role: 'tool', content: message.content.map(toAiSdkToolResult) };
    default:
      return assertNever(message, 'message');
  }
}

/**
 * Converts AI SDK messages back to turnlog messages: the inverse of {@link toAiSdkMessages}
 * for everything turnlog represents (text, reasoning, tool calls, text tool results, provider
 * tool calls and JSON results). A part
 * turnlog cannot represent (files, images, approvals, JSON tool output) is an error naming it.
 */
export function fromAiSdkMessages(messages: readonly AiSdkMessage[]): ModelMessage[] {
  return messages.map((message): ModelMessage => {
    switch (message.role) {
      case 'system':
        return { role: 'system', content: message.content };
      case 'user':
        return { role: 'user', content: fromAiSdkUserContent(message.content) };
      case 'assistant':
        return { role: 'assistant', content: fromAiSdkAssistantContent(message.content) };
      case 'tool':
        return { role: 'tool', content: fromAiSdkToolContent(message.content) };
      default:
        return assertNever(message, 'message');
    }
  });
}

/** A user message's content: text as a string; with files (base64 data), text and file parts. */
function fromAiSdkUserContent(content: AiSdkUserContent): string | UserPart[] {
  if (typeof content === 'string') return content;
  if (!content.some((part) => part.type === 'file')) {
    return content
      .map((part) => (part.type === 'text' ? part.text : unsupportedPart('user', part)))
      .join('');
  }
  return content.map((part): UserPart => {
    if (part.type === 'text') return { type: 'text', text: part.text };
    if (part.type === 'file' && typeof part.data === 'string') {
      return {
        type: 'file',
        mediaType: part.mediaType,
        data: part.data,
        ...(part.filename === undefined ? {} : { filename: part.filename }),
      };
    }
    return unsupportedPart('user', part);
  });
}

/**
 * Tools as the AI SDK sees them: a description and a JSON Schema, never an `execute` (I4); a
 * provider tool as its id and arguments, which the provider package turns into its own tool.
 */
export function toAiSdkTools(tools: readonly RequestTool[]): ToolSet {
  const toolSet: ToolSet = {};
  for (const tool of tools) {
    toolSet[tool.name] =
      tool.type === 'provider'
        ? {
            type: 'provider',
            id: tool.id,
            args: tool.args,
            inputSchema: jsonSchema({ type: 'object' }),
            isProviderExecuted: true,
            // turnlog records the raw parts itself: the SDK must not fail a step over a result
            // whose call came in an earlier request (Anthropic's deferred results).
            supportsDeferredResults: true,
          }
        : { description: tool.description, inputSchema: jsonSchema(tool.inputSchema) };
  }
  return toolSet;
}

/**
 * Provider metadata from a stream part as turnlog provider options: a plain-JSON copy
 * (`undefined` entries dropped), or `undefined` when there is none.
 */
export function toProviderOptions(metadata: unknown): ProviderOptions | undefined {
  if (typeof metadata !== 'object' || metadata === null) return undefined;
  let copy: unknown;
  try {
    copy = JSON.parse(JSON.stringify(metadata));
  } catch {
    return undefined;
  }
  if (typeof copy !== 'object' || copy === null || Object.keys(copy).length === 0) return undefined;
  return copy as ProviderOptions;
}

function toAiSdkAssistantPart(part: AssistantPart): Exclude<AssistantContent, string>[number] {
  switch (part.type) {
    case 'text':
      return withOptions({ type: 'text', text: part.text }, part.providerOptions);
    case 'reasoning':
      return withOptions({ type: 'reasoning', text: part.text }, part.providerOptions);
    case 'tool-call':
    case 'provider-tool-call':
      return withOptions(
        {
          type: 'tool-call',
          toolCallId: part.callId,
          toolName: part.name,
          input: part.input,
          ...(part.type === 'provider-tool-call' ? { providerExecuted: true } : {}),
        },
        part.providerOptions,
      );
    case 'provider-tool-result':
      return withOptions(
        {
          type: 'tool-result',
          toolCallId: part.callId,
          toolName: part.name,
          output: part.isError
            ? { type: 'error-json', value: part.result }
            : { type: 'json', value: part.result },
        },
        part.providerOptions,
      );
    default:
      return assertNever(part, 'assistant part');
  }
}

function toAiSdkToolResult(part: ToolResultPart): ToolContent[number] {
  return {
    type: 'tool-result',
    toolCallId: part.callId,
    toolName: part.name,
    output: part.isError
      ? { type: 'error-text', value: part.text }
      : { type: 'text', value: part.text },
  };
}

function fromAiSdkAssistantContent(content: AssistantContent): AssistantPart[] {
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  return content.map((part): AssistantPart => {
    switch (part.type) {
      case 'text':
        return withOptions({ type: 'text', text: part.text }, part.providerOptions);
      case 'reasoning':
        return withOptions({ type: 'reasoning', text: part.text }, part.providerOptions);
      case 'tool-call':
        return withOptions(
          {
            type: part.providerExecuted === true ? 'provider-tool-call' : 'tool-call',
            callId: part.toolCallId,
            name: part.toolName,
            input: part.input as JsonValue,
          },
          part.providerOptions,
        );
      case 'tool-result': {
        const { output } = part;
        if (output.type !== 'json' && output.type !== 'error-json') {
          return unsupportedPart('assistant', { type: `tool-result output ${output.type}` });
        }
        return withOptions(
          {
            type: 'provider-tool-result',
            callId: part.toolCallId,
            name: part.toolName,
            result: output.value as JsonValue,
            isError: output.type === 'error-json',
          },
          part.providerOptions,
        );
      }
      default:
        return unsupportedPart('assistant', part);
    }
  });
}

function fromAiSdkToolContent(content: ToolContent): ToolResultPart[] {
  return content.map((part) => {
    if (part.type !== 'tool-result') return unsupportedPart('tool', part);
    const { output } = part;
    if (output.type !== 'text' && output.type !== 'error-text') {
      return unsupportedPart('tool', { type: `tool-result output ${output.type}` });
    }
    return {
      type: 'tool-result',
      callId: part.toolCallId,
      name: part.toolName,
      text: output.value,
      isError: output.type === 'error-text',
    };
  });
}

/** `part` with `providerOptions` when there are any (no `providerOptions: undefined` key). */
export function withOptions<TPart extends object>(
  part: TPart,
  providerOptions: Record<string, unknown> | undefined,
): TPart & { providerOptions?: ProviderOptions } {
  return providerOptions === undefined
    ? part
    : { ...part, providerOptions: providerOptions as ProviderOptions };
}

function unsupportedPart(role: string, part: { type: string }): never {
  throw new Error(
    `fromAiSdkMessages: a ${role} message has a "${part.type}" part, which turnlog messages cannot represent; keep such messages out of turnlog history`,
  );
}
