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
  content: string;
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
