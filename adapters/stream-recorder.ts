import type { LanguageModelV4StreamPart } from '@ai-sdk/provider';
import type { ContentPart, FinishReason, ToolCallRecord, Usage } from '../events/facts.ts';
import type { ProviderOptions } from '../events/json.ts';
import { toProviderOptions } from './message-conversion.ts';
import { createToolCallGuard } from './tool-call-guard.ts';

/** Everything one physical request showed, as turnlog data. */
export interface RecordedRequest {
  /** Text and reasoning parts in the order they started, with their provider options. */
  content(): ContentPart[];
  /** Every `finish` part (a well-formed stream has exactly one). */
  finishes: { finishReason: FinishReason; usage: Usage }[];
  response: { id: string | undefined; modelId: string | undefined };
  /** Whether any text, reasoning or tool-input byte streamed. */
  observedOutput: boolean;
  /** The first failure: the request was rejected, an `error` part, or the stream broke. */
  failure: { error: unknown } | undefined;
  /** The guard's judgement of every resolved call; call once the stream has ended. */
  toolCalls(): ToolCallRecord[];
}

/** Observes the raw stream of one physical request (one `doStream` call). */
export interface StreamRecorder {
  readonly recorded: RecordedRequest;
  /** Wraps the model's stream: every part is observed, then passed on unchanged. */
  observe(
    stream: ReadableStream<LanguageModelV4StreamPart>,
  ): ReadableStream<LanguageModelV4StreamPart>;
  /** The request itself was rejected (HTTP error, connection refused, …). */
  requestFailed(error: unknown): void;
  /** The request was aborted; no call of it may run. */
  aborted(): void;
}

interface DraftPart {
  type: 'text' | 'reasoning';
  text: string;
  metadata: unknown;
}

/**
 * Creates the observer of one physical request: its tool-call guard (one tracker per request),
 * its content, finish, usage and response metadata, taken from the model's own stream parts
 * before any SDK translation.
 */
export function createStreamRecorder({
  maxOutputTokens,
}: {
  maxOutputTokens: number | undefined;
}): StreamRecorder {
  const guard = createToolCallGuard({ maxOutputTokens });
  const parts: DraftPart[] = [];
  const openParts = { text: new Map<string, DraftPart>(), reasoning: new Map<string, DraftPart>() };
  const providerExecuted = new Set<string>();
  const recorded: RecordedRequest = {
    content: () => parts.flatMap(toContentPart),
    finishes: [],
    response: { id: undefined, modelId: undefined },
    observedOutput: false,
    failure: undefined,
    toolCalls: () => guard.judge(),
  };

  function fail(error: unknown): void {
    recorded.failure ??= { error };
  }

  function contentPart(type: 'text' | 'reasoning', id: string): DraftPart {
    let part = openParts[type].get(id);
    if (part === undefined) {
      part = { type, text: '', metadata: undefined };
      openParts[type].set(id, part);
      parts.push(part);
    }
    return part;
  }

  // Not a switch ending in assertNever: the SDK's part union grows between versions, and a
  // part this adapter does not know must pass through untouched.
  function observePart(part: LanguageModelV4StreamPart): void {
    const type = part.type;
    if (type === 'text-start' || type === 'reasoning-start') {
      const kind = type === 'text-start' ? 'text' : 'reasoning';
      const open = contentPart(kind, part.id);
      open.metadata = part.providerMetadata ?? open.metadata;
    } else if (type === 'text-delta' || type === 'reasoning-delta') {
      const open = contentPart(type === 'text-delta' ? 'text' : 'reasoning', part.id);
      open.text += part.delta;
      // Same rule as the AI SDK's own step content: the latest metadata a part carried wins.
      open.metadata = part.providerMetadata ?? open.metadata;
      if (part.delta.length > 0) recorded.observedOutput = true;
    } else if (type === 'text-end' || type === 'reasoning-end') {
      const kind = type === 'text-end' ? 'text' : 'reasoning';
      const open = contentPart(kind, part.id);
      open.metadata = part.providerMetadata ?? open.metadata;
      openParts[kind].delete(part.id);
    } else if (type === 'tool-input-start') {
      // Provider-executed tools run at the provider; turnlog neither proves nor settles them.
      if (part.providerExecuted === true) providerExecuted.add(part.id);
      else guard.observe({ type, id: part.id, toolName: part.toolName });
    } else if (type === 'tool-input-delta') {
      if (part.delta.length > 0) recorded.observedOutput = true;
      if (!providerExecuted.has(part.id)) guard.observe({ type, id: part.id, delta: part.delta });
    } else if (type === 'tool-input-end') {
      if (!providerExecuted.has(part.id)) guard.observe({ type, id: part.id });
    } else if (type === 'tool-call') {
      if (part.providerExecuted === true || providerExecuted.has(part.toolCallId)) return;
      const providerOptions: ProviderOptions | undefined = toProviderOptions(part.providerMetadata);
      guard.observe({
        type,
        id: part.toolCallId,
        toolName: part.toolName,
        input: part.input,
        ...(providerOptions === undefined ? {} : { providerOptions }),
      });
    } else if (type === 'response-metadata') {
      recorded.response = {
        id: part.id ?? recorded.response.id,
        modelId: part.modelId ?? recorded.response.modelId,
      };
    } else if (type === 'finish') {
      const usage = toUsage(part.usage);
      const finishReason: FinishReason = {
        unified: part.finishReason.unified,
        raw: part.finishReason.raw ?? undefined,
      };
      recorded.finishes.push({ finishReason, usage });
      guard.observe({ type, finishReason, outputTokens: usage.outputTokens });
    } else if (type === 'error') {
      fail(part.error);
      guard.observe({ type: 'error' });
    }
  }

  return {
    recorded,
    observe(stream) {
      const reader = stream.getReader();
      return new ReadableStream<LanguageModelV4StreamPart>({
        async pull(controller) {
          let next: ReadableStreamReadResult<LanguageModelV4StreamPart>;
          try {
            next = await reader.read();
          } catch (error) {
            fail(error);
            guard.observe({ type: 'error' });
            controller.error(error);
            return;
          }
          if (next.done) {
            controller.close();
            return;
          }
          observePart(next.value);
          controller.enqueue(next.value);
        },
        cancel(reason) {
          guard.observe({ type: 'abort' });
          return reader.cancel(reason);
        },
      });
    },
    requestFailed(error) {
      fail(error);
      guard.observe({ type: 'error' });
    },
    aborted() {
      guard.observe({ type: 'abort' });
    },
  };
}

function toContentPart(part: DraftPart): ContentPart[] {
  const providerOptions = toProviderOptions(part.metadata);
  // An empty text part carries nothing to replay unless it holds provider options.
  if (part.type === 'text' && part.text.length === 0 && providerOptions === undefined) return [];
  return [
    providerOptions === undefined
      ? { type: part.type, text: part.text }
      : { type: part.type, text: part.text, providerOptions },
  ];
}

type RawUsage = Extract<LanguageModelV4StreamPart, { type: 'finish' }>['usage'];

/** The provider's usage in turnlog's shape: a number it did not report stays `undefined`. */
function toUsage(usage: RawUsage | undefined): Usage {
  return {
    inputTokens: count(usage?.inputTokens?.total),
    outputTokens: count(usage?.outputTokens?.total),
    reasoningTokens: count(usage?.outputTokens?.reasoning),
    cachedInputTokens: count(usage?.inputTokens?.cacheRead),
  };
}

function count(value: number | null | undefined): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}
