import type {
  ContentPart,
  FinishReason,
  ProviderFailure,
  RequestCapture,
  RunSettings,
  ToolCallRecord,
  Usage,
} from '../events/facts.ts';
import type { ProviderOptions } from '../events/json.ts';
import type { ModelMessage, RequestTool } from '../events/messages.ts';

/**
 * The model adapter contract. One `step()` = one provider request and its one response
 * stream, normalized into turnlog's own events. An adapter never executes a tool, never
 * loops, never retries and holds no session state. No SDK type crosses this file.
 */

export type {
  AssistantMessage,
  AssistantPart,
  ModelMessage,
  ModelToolDefinition,
  ProviderToolCallPart,
  ProviderToolDefinition,
  ProviderToolResultPart,
  ReasoningPart,
  RequestTool,
  SystemMessage,
  TextPart,
  ToolCallPart,
  ToolMessage,
  ToolResultPart,
  UserMessage,
} from '../events/messages.ts';
export type { ContentPart, FinishReason, ProviderFailure, RequestCapture, ToolCallRecord, Usage };

/** One provider request. */
export interface ModelStepRequest {
  system?: string;
  messages: ModelMessage[];
  /** Tools the model may call (schemas only), and provider tools the provider runs itself. */
  tools: RequestTool[];
  /** Names of the tools the model may call in this step (all of `tools` when absent). */
  activeTools?: string[];
  /** Output token limit sent to the provider; also the guard's cut-off threshold. */
  maxOutputTokens?: number;
  abortSignal: AbortSignal;
  /**
   * Milliseconds the provider may stay silent (before its first part, or between parts) before
   * the request is abandoned and the step fails as a retryable `timeout`. No limit when absent.
   */
  idleTimeoutMs?: number;
  /**
   * The run's sampling settings (`settings` of `createRuntime` and `send`); an adapter's own
   * fixed settings (`aiSdkAdapter(model, { settings })`) apply where these leave a field out.
   */
  sampling?: ModelSampling;
  /** Provider options sent with the request (`{ openai: { reasoningEffort: 'low' } }`). */
  providerOptions?: ProviderOptions;
}

/** Sampling settings of a request: what `RunSettings` holds besides provider options. */
export type ModelSampling = Omit<RunSettings, 'providerOptions'>;

/** Transient events of one step, in stream order. */
export type ModelStepEvent =
  | { type: 'text.delta'; text: string }
  | { type: 'reasoning.delta'; text: string }
  | {
      type: 'tool.input.delta';
      callId: string;
      name: string;
      delta: string;
      /** A call of a provider-executed tool: the provider runs it, turnlog never does. */
      providerExecuted?: true;
    };

/** The payload of the fact a step ends with (the runtime adds the envelope and `stepId`). */
export type ModelStepCompletion =
  | {
      type: 'step.completed';
      finishReason: FinishReason;
      usage: Usage;
      content: ContentPart[];
      toolCalls: ToolCallRecord[];
      response: { id: string | undefined; modelId: string | undefined };
    }
  | { type: 'step.failed'; error: ProviderFailure; observedOutput: boolean };

/** A running step. */
export interface ModelStep {
  /** What is being sent (equal to `adapter.capture(request)`). */
  request: RequestCapture;
  /** Transient deltas; ends when the provider stream ends. Reading it is optional. */
  events: AsyncIterable<ModelStepEvent>;
  /** Never rejects: every failure resolves as `step.failed`. */
  completion: Promise<ModelStepCompletion>;
}

/** Turns one request into one provider step. */
export interface ModelAdapter {
  /** Provider id, e.g. `openai.responses`; reasoning is replayed only to the same provider. */
  readonly provider: string;
  readonly modelId: string;
  /**
   * Describes a request without sending it, so `step.started` can be durable before the
   * request goes out (I2). Pure: the same request always gives the same capture.
   */
  capture(request: Omit<ModelStepRequest, 'abortSignal'>): RequestCapture;
  /** Sends exactly one provider request. */
  step(request: ModelStepRequest): ModelStep;
}
