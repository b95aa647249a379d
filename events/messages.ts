import type { ProviderToolCallPart, ProviderToolResultPart } from './facts.ts';
import type { JsonObject, JsonValue, ProviderOptions } from './json.ts';

export type { ProviderToolCallPart, ProviderToolResultPart };

/**
 * turnlog's own message format: what `projectHistory` builds from the log and what a
 * `ModelAdapter` converts to its provider's messages. No SDK type appears here.
 */
export type ModelMessage = SystemMessage | UserMessage | AssistantMessage | ToolMessage;

export interface SystemMessage {
  role: 'system';
  content: string;
}

export interface UserMessage {
  role: 'user';
  /** Text alone as a string; with attached files, the text and the files as parts. */
  content: string | UserPart[];
}

/** A part of a user message that carries files. */
export type UserPart = TextPart | FilePart;

/** A file a user attached (an image, a PDF), as `run.started` records it. */
export interface FilePart {
  type: 'file';
  mediaType: string;
  /** The bytes, base64. */
  data: string;
  filename?: string;
}

/**
 * The user message of a run's input: its text, as a plain string when no file is attached (so
 * a log without files projects, and hashes, as it always did).
 */
export function userContent(input: {
  text: string;
  files?: readonly { mediaType: string; data: string; filename?: string | undefined }[] | undefined;
}): string | UserPart[] {
  if (input.files === undefined || input.files.length === 0) return input.text;
  return [
    ...(input.text === '' ? [] : [{ type: 'text' as const, text: input.text }]),
    ...input.files.map(
      (file): FilePart => ({
        type: 'file',
        mediaType: file.mediaType,
        data: file.data,
        ...(file.filename === undefined ? {} : { filename: file.filename }),
      }),
    ),
  ];
}

/** A user message's text, with each file as a one-line mention (for transcripts). */
export function userText(content: string | readonly UserPart[]): string {
  if (typeof content === 'string') return content;
  return content
    .map((part) =>
      part.type === 'text'
        ? part.text
        : `[file: ${part.mediaType}${part.filename === undefined ? '' : ` ${part.filename}`}]`,
    )
    .join('\n');
}

export interface AssistantMessage {
  role: 'assistant';
  content: AssistantPart[];
}

export interface ToolMessage {
  role: 'tool';
  content: ToolResultPart[];
}

export type AssistantPart =
  | TextPart
  | ReasoningPart
  | ToolCallPart
  | ProviderToolCallPart
  | ProviderToolResultPart;

export interface TextPart {
  type: 'text';
  text: string;
  providerOptions?: ProviderOptions;
}

export interface ReasoningPart {
  type: 'reasoning';
  text: string;
  providerOptions?: ProviderOptions;
}

export interface ToolCallPart {
  type: 'tool-call';
  callId: string;
  name: string;
  input: JsonValue;
  providerOptions?: ProviderOptions;
}

/** The one result the model sees for a call: `text` is exactly the `tool.settled` text. */
export interface ToolResultPart {
  type: 'tool-result';
  callId: string;
  name: string;
  text: string;
  /** True for outcomes other than `success` (the provider may mark the result as an error). */
  isError: boolean;
}

/** A tool as the model sees it: a name, a description and a JSON Schema. Never an `execute`. */
export interface ModelToolDefinition {
  type?: 'function';
  name: string;
  description: string;
  inputSchema: JsonObject;
}

/**
 * A tool the provider defines and executes itself (`openai.tools.webSearch()`, Anthropic's web
 * search, Google search grounding), as plain data: the provider's tool id and its arguments.
 * turnlog sends it with the request and records what the provider streams of it; it never runs it.
 */
export interface ProviderToolDefinition {
  type: 'provider';
  name: string;
  /** The provider's tool id, `<provider>.<tool>`, e.g. `openai.web_search`. */
  id: `${string}.${string}`;
  args: JsonObject;
}

/** Any tool a request carries. */
export type RequestTool = ModelToolDefinition | ProviderToolDefinition;
