import type { LanguageModelV4StreamPart } from '@ai-sdk/provider';
import type { ContentPart, FinishReason, ToolCallRecord, Usage } from '../events/facts.ts';
import type { JsonValue } from '../events/json.ts';
import { toProviderOptions, withOptions } from './message-conversion.ts';
import { isOutput } from './stream-parts.ts';
import { createToolCallGuard, type ToolCallGuard } from './tool-call-guard.ts';

/** Everything one physical request showed, as turnlog data. */
export interface RecordedRequest {
  /**
   * Text and reasoning parts in the order they started, and provider-executed tool calls and
   * results where they arrived, with their provider options.
   */
  content(): ContentPart[];
  /** Every `finish` part (a well-formed stream has exactly one). */
  readonly finishes: readonly { finishReason: FinishReason; usage: Usage }[];
  readonly response: { id: string | undefined; modelId: string | undefined };
  /** Whether any output of the model streamed (stream-parts.ts classifies every part type). */
  readonly observedOutput: boolean;
  /** The first failure: the request was rejected, an `error` part, or the stream broke. */
  readonly failure: { error: unknown } | undefined;
  /** The guard's judgement of every resolved call; call once the stream has ended. */
  toolCalls(): ToolCallRecord[];
}

type StreamPart = LanguageModelV4StreamPart;
type PartOf<TType extends StreamPart['type']> = Extract<StreamPart, { type: TType }>;
type ContentStreamPart = PartOf<
  'text-start' | 'reasoning-start' | 'text-delta' | 'reasoning-delta' | 'text-end' | 'reasoning-end'
>;

type TextDraft = { type: 'text' | 'reasoning'; text: string; metadata: unknown };
type DraftPart = TextDraft | { type: 'provider-tool'; part: ContentPart };

/**
 * Creates the observer of one physical request: its tool-call guard (one tracker per request),
 * its content, finish, usage and response metadata, taken from the model's own stream parts
 * before any SDK translation.
 */
export function createStreamRecorder(options: {
  maxOutputTokens: number | undefined;
}): StreamRecorder {
  return new StreamRecorder(options);
}

/**
 * Observes the raw stream of one physical request (one `doStream` call), and holds what it
 * showed: one recorder per request, so concurrent requests never share a guard.
 */
export class StreamRecorder implements RecordedRequest {
  readonly finishes: { finishReason: FinishReason; usage: Usage }[] = [];
  response: { id: string | undefined; modelId: string | undefined } = {
    id: undefined,
    modelId: undefined,
  };
  observedOutput = false;
  failure: { error: unknown } | undefined = undefined;
  readonly #guard: ToolCallGuard;
  readonly #parts: DraftPart[] = [];
  readonly #openParts = {
    text: new Map<string, TextDraft>(),
    reasoning: new Map<string, TextDraft>(),
  };
  /** The ids of calls of tools the provider runs itself. */
  readonly #providerExecuted = new Set<string>();

  constructor({ maxOutputTokens }: { maxOutputTokens: number | undefined }) {
    this.#guard = createToolCallGuard({ maxOutputTokens });
  }

  content(): ContentPart[] {
    return this.#parts.flatMap(toContentPart);
  }

  toolCalls(): ToolCallRecord[] {
    return this.#guard.judge();
  }

  /** Wraps the model's stream: every part is observed, then passed on unchanged. */
  observe(stream: ReadableStream<StreamPart>): ReadableStream<StreamPart> {
    return new ReadableStream<StreamPart>(new RecordingSource(stream.getReader(), this));
  }

  /**
   * The request failed: it was rejected (HTTP error, connection refused, …), it streamed an
   * `error` part, or its stream broke. The first failure is the one kept; no call of it may run.
   */
  requestFailed(error: unknown): void {
    this.failure ??= { error };
    this.#guard.observe({ type: 'error' });
  }

  /** The request was aborted; no call of it may run. */
  aborted(): void {
    this.#guard.observe({ type: 'abort' });
  }

  /** Whether the call is of a tool the provider runs itself (its start part said so). */
  isProviderExecuted(callId: string): boolean {
    return this.#providerExecuted.has(callId);
  }

  /** Records one raw part of the model's stream. */
  observePart(part: StreamPart): void {
    if (isOutput(part)) this.observedOutput = true;
    // A switch over every part type (see stream-parts.ts): a type added by an SDK upgrade is a
    // compile error here, and at run time a type this build does not know passes through untouched.
    switch (part.type) {
      case 'text-start':
      case 'reasoning-start':
      case 'text-delta':
      case 'reasoning-delta':
      case 'text-end':
      case 'reasoning-end':
        this.#observeContent(part);
        return;
      case 'tool-input-start':
        // Provider-executed tools run at the provider: the guard neither proves nor settles them.
        if (part.providerExecuted === true) this.#providerExecuted.add(part.id);
        else this.#guard.observe({ type: part.type, id: part.id, toolName: part.toolName });
        return;
      case 'tool-input-delta':
        if (!this.#providerExecuted.has(part.id)) {
          this.#guard.observe({ type: part.type, id: part.id, delta: part.delta });
        }
        return;
      case 'tool-input-end':
        if (!this.#providerExecuted.has(part.id)) {
          this.#guard.observe({ type: part.type, id: part.id });
        }
        return;
      case 'tool-call':
        this.#observeToolCall(part);
        return;
      case 'tool-result':
        this.#observeToolResult(part);
        return;
      case 'response-metadata':
        this.response = {
          id: part.id ?? this.response.id,
          modelId: part.modelId ?? this.response.modelId,
        };
        return;
      case 'finish':
        this.#observeFinish(part);
        return;
      case 'error':
        this.requestFailed(part.error);
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

  #observeContent(part: ContentStreamPart): void {
    const kind = part.type.startsWith('text') ? 'text' : 'reasoning';
    const open = this.#openPart(kind, part.id);
    if (part.type === 'text-delta' || part.type === 'reasoning-delta') open.text += part.delta;
    // Same rule as the AI SDK's own step content: the latest metadata a part carried wins.
    open.metadata = part.providerMetadata ?? open.metadata;
    if (part.type === 'text-end' || part.type === 'reasoning-end') {
      this.#openParts[kind].delete(part.id);
    }
  }

  #openPart(type: 'text' | 'reasoning', id: string): TextDraft {
    let part = this.#openParts[type].get(id);
    if (part === undefined) {
      part = { type, text: '', metadata: undefined };
      this.#openParts[type].set(id, part);
      this.#parts.push(part);
    }
    return part;
  }

  #observeToolCall(part: PartOf<'tool-call'>): void {
    const providerOptions = toProviderOptions(part.providerMetadata);
    if (part.providerExecuted === true || this.#providerExecuted.has(part.toolCallId)) {
      this.#parts.push({
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
    this.#guard.observe({
      type: part.type,
      id: part.toolCallId,
      toolName: part.toolName,
      input: part.input,
      ...(providerOptions === undefined ? {} : { providerOptions }),
    });
  }

  #observeToolResult(part: PartOf<'tool-result'>): void {
    // Only a provider streams results, of its own tools; a preliminary one is superseded.
    if (part.preliminary === true) return;
    this.#parts.push({
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
  }

  #observeFinish(part: PartOf<'finish'>): void {
    const usage = toUsage(part.usage);
    const finishReason: FinishReason = {
      unified: part.finishReason.unified,
      raw: part.finishReason.raw ?? undefined,
    };
    this.finishes.push({ finishReason, usage });
    this.#guard.observe({ type: part.type, finishReason, outputTokens: usage.outputTokens });
  }
}

/** The source of the stream a recorder passes on: it reads the model's stream part by part. */
class RecordingSource implements UnderlyingDefaultSource<StreamPart> {
  readonly #reader: ReadableStreamDefaultReader<StreamPart>;
  readonly #recorder: StreamRecorder;

  constructor(reader: ReadableStreamDefaultReader<StreamPart>, recorder: StreamRecorder) {
    this.#reader = reader;
    this.#recorder = recorder;
  }

  async pull(controller: ReadableStreamDefaultController<StreamPart>): Promise<void> {
    let next: ReadableStreamReadResult<StreamPart>;
    try {
      next = await this.#reader.read();
    } catch (error) {
      this.#recorder.requestFailed(error);
      controller.error(error);
      return;
    }
    if (next.done) {
      controller.close();
      return;
    }
    this.#recorder.observePart(next.value);
    controller.enqueue(next.value);
  }

  cancel(reason: unknown): Promise<void> {
    this.#recorder.aborted();
    return this.#reader.cancel(reason);
  }
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
