import type { LanguageModelV4StreamPart } from '@ai-sdk/provider';
import type { ContentPart, FinishReason, ToolCallRecord, Usage } from '../events/facts.ts';
import type { JsonValue } from '../events/json.ts';
import { toProviderOptions, withOptions } from './message-conversion.ts';
import { isOutput } from './stream-parts.ts';
import { createToolCallGuard } from './tool-call-guard.ts';

/** Everything one physical request showed, as turnlog data. */
export interface RecordedRequest {
  /**
   * Text and reasoning parts in the order they started, and provider-executed tool calls and
   * results where they arrived, with their provider options.
   */
  content(): ContentPart[];
  /** Every `finish` part (a well-formed stream has exactly one). */
  finishes: { finishReason: FinishReason; usage: Usage }[];
  response: { id: string | undefined; modelId: string | undefined };
  /** Whether any output of the model streamed (stream-parts.ts classifies every part type). */
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

type DraftPart =
  | { type: 'text' | 'reasoning'; text: string; metadata: unknown }
  | { type: 'provider-tool'; part: ContentPart };

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
  const openParts = {
    text: new Map<string, Extract<DraftPart, { type: 'text' | 'reasoning' }>>(),
    reasoning: new Map<string, Extract<DraftPart, { type: 'text' | 'reasoning' }>>(),
  };
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

  function contentPart(type: 'text' | 'reasoning', id: string) {
    let part = openParts[type].get(id);
    if (part === undefined) {
      part = { type, text: '', metadata: undefined };
      openParts[type].set(id, part);
      parts.push(part);
    }
    return part;
  }

  // A switch over every part type (see stream-parts.ts): a type added by an SDK upgrade is a
  // compile error here, and at run time a type this build does not know passes through untouched.
  function observePart(part: LanguageModelV4StreamPart): void {
    if (isOutput(part)) recorded.observedOutput = true;
    switch (part.type) {
      case 'text-start':
      case 'reasoning-start':
      case 'text-delta':
      case 'reasoning-delta':
      case 'text-end':
      case 'reasoning-end': {
        const kind = part.type.startsWith('text') ? 'text' : 'reasoning';
        const open = contentPart(kind, part.id);
        if (part.type === 'text-delta' || part.type === 'reasoning-delta') open.text += part.delta;
        // Same rule as the AI SDK's own step content: the latest metadata a part carried wins.
        open.metadata = part.providerMetadata ?? open.metadata;
        if (part.type === 'text-end' || part.type === 'reasoning-end') {
          openParts[kind].delete(part.id);
        }
        return;
      }
      case 'tool-input-start':
        // Provider-executed tools run at the provider: the guard neither proves nor settles them.
        if (part.providerExecuted === true) providerExecuted.add(part.id);
        else guard.observe({ type: part.type, id: part.id, toolName: part.toolName });
        return;
      case 'tool-input-delta':
        if (!providerExecuted.has(part.id)) {
          guard.observe({ type: part.type, id: part.id, delta: part.delta });
        }
        return;
      case 'tool-input-end':
        if (!providerExecuted.has(part.id)) guard.observe({ type: part.type, id: part.id });
        return;
      case 'tool-call': {
        const providerOptions = toProviderOptions(part.providerMetadata);
        if (part.providerExecuted === true || providerExecuted.has(part.toolCallId)) {
          parts.push({
            type: 'provider-tool',
            part: withOptions(
              {
                type: 'provider-tool-call',
                callId: part.toolCallId,
                name: part.toolName,
                input: parseInput(part.input),
              },
              providerOptions,
            ),
          });
          return;
        }
        guard.observe({
          type: part.type,
          id: part.toolCallId,
          toolName: part.toolName,
          input: part.input,
          ...(providerOptions === undefined ? {} : { providerOptions }),
        });
        return;
      }
      case 'tool-result':
        // Only a provider streams results, of its own tools; a preliminary one is superseded.
        if (part.preliminary === true) return;
        parts.push({
          type: 'provider-tool',
          part: withOptions(
            {
              type: 'provider-tool-result',
              callId: part.toolCallId,
              name: part.toolName,
              // A plain-JSON copy: the provider's object may hold `undefined` entries.
              result: JSON.parse(JSON.stringify(part.result)) as JsonValue,
              isError: part.isError === true,
            },
            toProviderOptions(part.providerMetadata),
          ),
        });
        return;
      case 'response-metadata':
        recorded.response = {
          id: part.id ?? recorded.response.id,
          modelId: part.modelId ?? recorded.response.modelId,
        };
        return;
      case 'finish': {
        const usage = toUsage(part.usage);
        const finishReason: FinishReason = {
          unified: part.finishReason.unified,
          raw: part.finishReason.raw ?? undefined,
        };
        recorded.finishes.push({ finishReason, usage });
        guard.observe({ type: part.type, finishReason, outputTokens: usage.outputTokens });
        return;
      }
      case 'error':
        fail(part.error);
        guard.observe({ type: 'error' });
        return;
      // Parts turnlog does not record or replay (approvals of provider tools are not supported).
      case 'tool-approval-request':
      case 'file':
      case 'reasoning-file':
      case 'source':
      case 'custom':
      case 'stream-start':
      case 'ping':
      case 'raw':
        return;
      default:
        part satisfies never;
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

function toContentPart(draft: DraftPart): ContentPart[] {
  if (draft.type === 'provider-tool') return [draft.part];
  const providerOptions = toProviderOptions(draft.metadata);
  // An empty text part carries nothing to replay unless it holds provider options.
  if (draft.type === 'text' && draft.text.length === 0 && providerOptions === undefined) return [];
  return [withOptions({ type: draft.type, text: draft.text }, providerOptions)];
}

/** A provider tool's input: the JSON it streamed, or its text when that is not JSON. */
function parseInput(input: string): JsonValue {
  try {
    return JSON.parse(input) as JsonValue;
  } catch {
    return input;
  }
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
