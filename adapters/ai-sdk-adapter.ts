import type {
  LanguageModelV3,
  LanguageModelV4,
  LanguageModelV4CallOptions,
  LanguageModelV4StreamPart,
} from '@ai-sdk/provider';
import { filterActiveTools } from 'ai';
import { prepareToolChoice, prepareTools, resolveLanguageModel } from 'ai/internal';
import type { ProviderFailure, RequestCapture } from '../events/facts.ts';
import { UnsupportedModelError } from './adapter-errors.ts';
import { createEventQueue, type EventQueue } from './event-queue.ts';
import { finishFailure, resolveFinishReason } from './finish-reason.ts';
import { createIdleTimeout } from './idle-timeout.ts';
import { createPromptConverter } from './language-model-prompt.ts';
import { toAiSdkTools } from './message-conversion.ts';
import type {
  ModelAdapter,
  ModelStepCompletion,
  ModelStepEvent,
  ModelStepRequest,
} from './model-adapter.ts';
import { classifyProviderError, streamInterruptedFailure } from './provider-error.ts';
import { createRequestHasher } from './request-hash.ts';
import {
  createStreamRecorder,
  type RecordedRequest,
  type StreamRecorder,
} from './stream-recorder.ts';

/** An AI SDK language model object: specification v3 (ai@6 providers) or v4 (ai@7 providers). */
export type AiSdkLanguageModel = LanguageModelV3 | LanguageModelV4;

/** Options of {@link aiSdkAdapter}: fixed sampling settings and the clock for `Retry-After`. */
export interface AiSdkAdapterOptions {
  /** Sampling settings sent with every request (plain values; no SDK type). */
  settings?: {
    temperature?: number;
    topP?: number;
    topK?: number;
    seed?: number;
    stopSequences?: string[];
    headers?: Record<string, string>;
  };
  /** Current time in ms since the epoch, used for `Retry-After` HTTP dates. */
  now?: () => number;
}

/**
 * A {@link ModelAdapter} over any AI SDK language model. Each `step()` makes exactly one
 * provider request: one `doStream` call, prepared as `experimental_streamLanguageModelCall`
 * prepares it, with the SDK's own functions (no `streamText` step loop, no retries; schema-only
 * tools: I4), except that the provider prompt converts only the messages the request adds
 * (adapters/language-model-prompt.ts). A fresh tool-call guard watches the model's own stream
 * parts, and one completion resolves that never rejects. `capture` hashes a request from where
 * the previous one left off, so it treats the messages it is given as unchanging objects.
 *
 * @example
 * import { createOpenAI } from '@ai-sdk/openai';
 * const adapter = aiSdkAdapter(createOpenAI()('gpt-5-mini'));
 * const step = adapter.step({ messages: [{ role: 'user', content: 'Hi' }], tools: [], abortSignal });
 * for await (const event of step.events) if (event.type === 'text.delta') process.stdout.write(event.text);
 * const completion = await step.completion; // { type: 'step.completed', … } or { type: 'step.failed', … }
 */
export function aiSdkAdapter(
  model: AiSdkLanguageModel,
  options: AiSdkAdapterOptions = {},
): ModelAdapter {
  assertLanguageModel(model);
  const provider = model.provider;
  const modelId = model.modelId;
  const hashRequest = createRequestHasher();
  // A v3 model is seen through the SDK's v4 view of it, as the SDK's own calls see it.
  const languageModel = resolveLanguageModel(model);
  const toPrompt = createPromptConverter();

  function capture(request: Omit<ModelStepRequest, 'abortSignal'>): RequestCapture {
    // The hash identifies what is sent: the abort signal and the idle limit are not.
    const {
      abortSignal: _abortSignal,
      idleTimeoutMs: _idleTimeoutMs,
      ...body
    } = request as ModelStepRequest;
    return {
      provider,
      modelId,
      messageCount: request.messages.length,
      tools: request.tools.map((tool) => tool.name),
      activeTools: request.activeTools === undefined ? undefined : [...request.activeTools],
      // Built by turnlog's own projection, so its key order is stable: no sorting needed. The
      // hasher resumes from the previous request's messages (the same, unchanged objects).
      inputHash: hashRequest(body),
    };
  }

  return {
    provider,
    modelId,
    capture,
    step(request) {
      const events = createEventQueue<ModelStepEvent>();
      return {
        // Hashing the whole request is not free, and the runtime already captured it for
        // step.started: compute it only for a caller that reads it.
        get request() {
          return capture(request);
        },
        events,
        completion: runStep({
          model: languageModel,
          toPrompt,
          request,
          events,
          now: options.now,
          settings: options.settings,
        }),
      };
    },
  };
}

/** Makes the step's one provider request and streams its deltas; resolves, never rejects. */
async function runStep({
  model,
  toPrompt,
  request,
  events,
  now,
  settings,
}: {
  model: LanguageModelV4;
  toPrompt: ReturnType<typeof createPromptConverter>;
  request: ModelStepRequest;
  events: EventQueue<ModelStepEvent>;
  now: (() => number) | undefined;
  settings: AiSdkAdapterOptions['settings'];
}): Promise<ModelStepCompletion> {
  let recorder: StreamRecorder | undefined;
  const idle = createIdleTimeout(request.idleTimeoutMs);
  const abortSignal = AbortSignal.any([request.abortSignal, idle.signal]);
  const onAbort = () => recorder?.aborted();
  abortSignal.addEventListener('abort', onAbort, { once: true });

  let sdkError: { error: unknown } | undefined;
  try {
    // What experimental_streamLanguageModelCall does before its one doStream call, with the
    // SDK's own functions; the prompt converts only the messages this request adds.
    const prompt = await toPrompt({
      system: request.system,
      messages: request.messages,
      target: {
        supportedUrls: await model.supportedUrls,
        provider: model.provider.split('.')[0] as string,
      },
      abortSignal,
    });
    const tools = await prepareTools({
      tools: filterActiveTools({
        tools: toAiSdkTools(request.tools),
        activeTools: request.activeTools,
      }),
    });
    // One recorder (and so one guard) per physical request: concurrent steps never share one.
    recorder = createStreamRecorder({ maxOutputTokens: request.maxOutputTokens });
    if (abortSignal.aborted) recorder.aborted();
    let result: Awaited<ReturnType<LanguageModelV4['doStream']>>;
    try {
      // One model call: no loop, no retries (I4), errors thrown or streamed as data.
      result = await model.doStream(callOptions({ request, settings, prompt, tools, abortSignal }));
    } catch (error) {
      recorder.requestFailed(error);
      throw error;
    }
    // The guard reads the model's own stream parts; the adapter reads the same parts after it.
    const deltas = new DeltaForwarder(events, recorder);
    for await (const part of recorder.observe(result.stream)) {
      idle.touch();
      if (part.type === 'error') sdkError ??= { error: part.error };
      else deltas.forward(part);
    }
  } catch (error) {
    sdkError ??= { error };
  } finally {
    idle.clear();
    events.close();
    abortSignal.removeEventListener('abort', onAbort);
  }

  try {
    return complete({ recorded: recorder, sdkError, request, idleFired: idle.fired, now });
  } catch (error) {
    return {
      type: 'step.failed',
      error: classifyProviderError(error, { observedOutput: false, aborted: false, now }),
      observedOutput: recorder?.observedOutput ?? false,
    };
  }
}

/** The options of the step's one `doStream` call, as experimental_streamLanguageModelCall's. */
function callOptions({
  request,
  settings,
  prompt,
  tools,
  abortSignal,
}: {
  request: ModelStepRequest;
  settings: AiSdkAdapterOptions['settings'];
  prompt: LanguageModelV4CallOptions['prompt'];
  tools: LanguageModelV4CallOptions['tools'];
  abortSignal: AbortSignal;
}): LanguageModelV4CallOptions {
  const { headers, ...sampling } = settings ?? {};
  return {
    ...sampling,
    ...request.sampling,
    maxOutputTokens: request.maxOutputTokens,
    tools,
    toolChoice: prepareToolChoice({ toolChoice: undefined }),
    responseFormat: undefined,
    prompt,
    providerOptions: request.providerOptions,
    abortSignal,
    headers,
    includeRawChunks: undefined,
  };
}

/** Passes the model's deltas on as the step's events: text, reasoning and tool input. */
class DeltaForwarder {
  readonly #events: EventQueue<ModelStepEvent>;
  // The recorder saw each part before it gets here, so it knows the provider's own calls.
  readonly #recorder: StreamRecorder;
  readonly #toolNames = new Map<string, string>();

  constructor(events: EventQueue<ModelStepEvent>, recorder: StreamRecorder) {
    this.#events = events;
    this.#recorder = recorder;
  }

  forward(part: LanguageModelV4StreamPart): void {
    // `if` rather than a switch: only these parts matter, and the union grows over versions.
    if (part.type === 'text-delta' && part.delta.length > 0) {
      this.#events.push({ type: 'text.delta', text: part.delta });
    } else if (part.type === 'reasoning-delta' && part.delta.length > 0) {
      this.#events.push({ type: 'reasoning.delta', text: part.delta });
    } else if (part.type === 'tool-input-start') {
      this.#toolNames.set(part.id, part.toolName);
    } else if (part.type === 'tool-input-delta' && part.delta.length > 0) {
      this.#events.push({
        type: 'tool.input.delta',
        callId: part.id,
        name: this.#toolNames.get(part.id) ?? '',
        delta: part.delta,
        // A provider tool's input streams too, marked as the provider's.
        ...(this.#recorder.isProviderExecuted(part.id) ? { providerExecuted: true as const } : {}),
      });
    }
  }
}

/** Turns what the request showed into the payload of the fact the step ends with. */
function complete({
  recorded,
  sdkError,
  request,
  idleFired,
  now,
}: {
  recorded: RecordedRequest | undefined;
  sdkError: { error: unknown } | undefined;
  request: ModelStepRequest;
  idleFired: boolean;
  now: (() => number) | undefined;
}): ModelStepCompletion {
  const observedOutput = recorded?.observedOutput ?? false;
  const failed = (error: ProviderFailure): ModelStepCompletion => ({
    type: 'step.failed',
    error,
    observedOutput,
  });

  const aborted = request.abortSignal;
  if (idleFired && !aborted.aborted) {
    return failed({
      kind: 'timeout',
      retryable: true,
      message: `The provider sent nothing for ${request.idleTimeoutMs} ms; the request was abandoned.`,
    });
  }
  if (aborted.aborted) {
    return failed(classifyProviderError(aborted.reason, { observedOutput, aborted: true, now }));
  }
  const failure = recorded?.failure ?? sdkError;
  if (failure !== undefined) {
    return failed(classifyProviderError(failure.error, { observedOutput, aborted: false, now }));
  }
  if (recorded === undefined) {
    return failed(streamInterruptedFailure('The model was never called for this step.'));
  }
  const [finish] = recorded.finishes;
  if (finish === undefined) {
    return failed(streamInterruptedFailure('The provider stream ended without a finish.'));
  }
  const finishReason = resolveFinishReason(finish.finishReason);
  const finishFailed = finishFailure(finishReason);
  if (finishFailed !== undefined) return failed(finishFailed);
  return {
    type: 'step.completed',
    finishReason,
    usage: finish.usage,
    content: recorded.content(),
    toolCalls: recorded.toolCalls(),
    response: recorded.response,
  };
}

function assertLanguageModel(model: unknown): asserts model is AiSdkLanguageModel {
  const candidate = model as Partial<LanguageModelV4> | null;
  const version =
    typeof candidate === 'object' && candidate !== null
      ? String(candidate.specificationVersion)
      : undefined;
  if (
    (version === 'v3' || version === 'v4') &&
    typeof candidate?.doStream === 'function' &&
    typeof candidate.provider === 'string' &&
    typeof candidate.modelId === 'string'
  ) {
    return;
  }
  throw new UnsupportedModelError({
    message: `aiSdkAdapter: expected an AI SDK language model object with specificationVersion "v3" or "v4" (from an ai@6+ provider package such as @ai-sdk/openai), got ${typeof model === 'string' ? `the string "${model}"` : `specificationVersion ${JSON.stringify(version)}`}; pass the model object, e.g. openai('gpt-5-mini')`,
    specificationVersion: version,
  });
}
