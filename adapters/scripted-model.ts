import {
  APICallError,
  type LanguageModelV4,
  type LanguageModelV4CallOptions,
  type LanguageModelV4Content,
  type LanguageModelV4FinishReason,
  type LanguageModelV4GenerateResult,
  type LanguageModelV4StreamPart,
  type LanguageModelV4StreamResult,
  type LanguageModelV4Usage,
} from '@ai-sdk/provider';
import type { FinishReason, Usage } from '../events/facts.ts';
import type { JsonValue } from '../events/json.ts';
import { ScriptExhaustedError } from './adapter-errors.ts';

/** A tool call the scripted model makes. */
export interface ScriptedToolCall {
  /** The call id; defaults to `call_1`, `call_2`, … counted across the whole script. */
  id?: string;
  name: string;
  /** The arguments (default `{}`); the final `tool-call` part carries their JSON text. */
  input?: JsonValue;
  /**
   * `'streamed'` (default): `tool-input-start`, argument deltas, `tool-input-end`, `tool-call`.
   * `'whole'`: only the `tool-call` part, as providers that do not stream arguments send it.
   */
  delivery?: 'streamed' | 'whole';
  /** The exact argument chunks to stream (default: the JSON of `input` in 16-character chunks). */
  deltas?: string[];
}

/** A provider error the request is rejected with (an `APICallError`, as real providers throw). */
export interface ScriptedError {
  status: number;
  message?: string;
  headers?: Record<string, string>;
  /** The response body; an object is sent as JSON. */
  body?: string | JsonValue;
}

/** One scripted provider response. Everything is optional; an empty step finishes with `stop`. */
export interface ScriptedResponse {
  /** Text, as one string or as the chunks to stream. */
  text?: string | string[];
  /** Reasoning; a signature is sent as provider metadata `{ scripted: { signature } }`. */
  reasoning?: string | string[] | { text: string | string[]; signature?: string };
  toolCalls?: ScriptedToolCall[];
  /** Default: `tool-calls` when the step has tool calls, else `stop`; `raw` defaults to undefined. */
  finishReason?: FinishReason['unified'] | { unified: FinishReason['unified']; raw?: string };
  /** Default: output tokens = number of streamed chunks, everything else unknown. */
  usage?: Partial<Usage>;
  /** Response metadata; defaults to `resp_<request number>` and the model's id. */
  response?: { id?: string; modelId?: string };
  /** Reject the request with this provider error before any output. */
  error?: ScriptedError;
  /** After the scripted output, the connection drops (a socket reset) instead of finishing. */
  disconnect?: boolean;
  /** After the scripted output, the stream stalls until the request is aborted. */
  stall?: boolean;
  /** Escape hatch for tests: exactly these stream parts are played, nothing else. */
  parts?: LanguageModelV4StreamPart[];
}

/** A step of the script: a response, or a function of the call options that returns one. */
export type ScriptedStep =
  | ScriptedResponse
  | ((call: LanguageModelV4CallOptions) => ScriptedResponse);

/** Options of {@link scriptedModel}. */
export interface ScriptedModelOptions {
  provider?: string;
  modelId?: string;
}

/** An AI SDK language model (spec v4) that plays a script. */
export interface ScriptedModel extends LanguageModelV4 {
  /**
   * The options of every call the model received, in order — without their `abortSignal`:
   * a signal keeps its listeners (the SDK's whole stream pipeline) alive, so recording it would
   * keep every finished request in memory.
   */
  readonly requests: Omit<LanguageModelV4CallOptions, 'abortSignal'>[];
  doStream(options: LanguageModelV4CallOptions): Promise<LanguageModelV4StreamResult>;
  doGenerate(options: LanguageModelV4CallOptions): Promise<LanguageModelV4GenerateResult>;
}

/**
 * A deterministic AI SDK language model for examples and tests: each provider request
 * (`doStream`, or `doGenerate`) plays the next scripted step. Instead of a list, the script may
 * be one function of each request (and its 0-based number), for a model that must answer any
 * number of requests — after a restart, say — from what the prompt holds.
 *
 * @example
 * const model = scriptedModel([
 *   { toolCalls: [{ name: 'readFile', input: { path: 'a.md' } }] },
 *   { text: ['The file ', 'says hello.'], usage: { inputTokens: 12, outputTokens: 5 } },
 * ]);
 * const adapter = aiSdkAdapter(model);
 * // …run steps; then inspect what the model was sent:
 * model.requests[1]?.prompt; // includes the tool result of call_1
 */
export function scriptedModel(
  script:
    | readonly ScriptedStep[]
    | ((call: LanguageModelV4CallOptions, index: number) => ScriptedResponse),
  options: ScriptedModelOptions = {},
): ScriptedModel {
  const requests: Omit<LanguageModelV4CallOptions, 'abortSignal'>[] = [];
  const modelId = options.modelId ?? 'scripted-model';
  let callCounter = 0;

  function nextResponse(call: LanguageModelV4CallOptions): {
    response: ScriptedResponse;
    n: number;
  } {
    const { abortSignal: _signal, ...recorded } = call;
    requests.push(recorded);
    if (typeof script === 'function')
      return { response: script(call, requests.length - 1), n: requests.length };
    const step = script[requests.length - 1];
    if (step === undefined) {
      throw new ScriptExhaustedError({
        message: `scriptedModel: request ${requests.length} arrived but the script has only ${script.length} step${script.length === 1 ? '' : 's'}; add a step for every provider request the test makes`,
        stepCount: script.length,
      });
    }
    return { response: typeof step === 'function' ? step(call) : step, n: requests.length };
  }

  function play(call: LanguageModelV4CallOptions) {
    const { response, n } = nextResponse(call);
    if (response.error !== undefined) throw providerError(response.error, call);
    const parts = response.parts ?? [
      ...responseParts(response, n, modelId, () => `call_${++callCounter}`),
    ];
    return { response, parts };
  }

  return {
    specificationVersion: 'v4',
    provider: options.provider ?? 'scripted',
    modelId,
    supportedUrls: {},
    requests,
    async doStream(call) {
      const { response, parts } = play(call);
      let index = 0;
      const stream = new ReadableStream<LanguageModelV4StreamPart>({
        async pull(controller) {
          const part = parts[index++];
          if (part !== undefined) return controller.enqueue(part);
          if (response.stall === true) await untilAborted(call.abortSignal);
          if (response.stall === true || response.disconnect === true) {
            return controller.error(
              response.stall === true ? call.abortSignal?.reason : socketReset(),
            );
          }
          controller.close();
        },
      });
      return { stream, request: { body: { scripted: true } }, response: { headers: {} } };
    },
    async doGenerate(call): Promise<LanguageModelV4GenerateResult> {
      const { response, parts } = play(call);
      if (response.stall === true) {
        await untilAborted(call.abortSignal);
        throw call.abortSignal?.reason;
      }
      if (response.disconnect === true) throw socketReset();
      return generateResult(parts);
    },
  };
}

function* responseParts(
  response: ScriptedResponse,
  n: number,
  modelId: string,
  nextCallId: () => string,
): Generator<LanguageModelV4StreamPart> {
  let chunks = 0;
  yield { type: 'stream-start', warnings: [] };
  yield {
    type: 'response-metadata',
    id: response.response?.id ?? `resp_${n}`,
    modelId: response.response?.modelId ?? modelId,
  };
  if (response.reasoning !== undefined) {
    const reasoning =
      typeof response.reasoning === 'object' && !Array.isArray(response.reasoning)
        ? response.reasoning
        : { text: response.reasoning };
    const id = `reasoning_${n}`;
    yield { type: 'reasoning-start', id };
    for (const delta of asChunks(reasoning.text)) {
      chunks += 1;
      yield { type: 'reasoning-delta', id, delta };
    }
    yield reasoning.signature === undefined
      ? { type: 'reasoning-end', id }
      : {
          type: 'reasoning-end',
          id,
          providerMetadata: { scripted: { signature: reasoning.signature } },
        };
  }
  if (response.text !== undefined) {
    const id = `text_${n}`;
    yield { type: 'text-start', id };
    for (const delta of asChunks(response.text)) {
      chunks += 1;
      yield { type: 'text-delta', id, delta };
    }
    yield { type: 'text-end', id };
  }
  for (const call of response.toolCalls ?? []) {
    const id = call.id ?? nextCallId();
    const projected = call.input !== undefined ? JSON.stringify(call.input) : undefined;
    const deltas = call.deltas ?? splitEvery(projected ?? '{}', 16);
    const input = projected ?? (call.deltas === undefined ? '{}' : call.deltas.join(''));
    if (call.delivery !== 'whole') {
      yield { type: 'tool-input-start', id, toolName: call.name };
      for (const delta of deltas) {
        chunks += 1;
        yield { type: 'tool-input-delta', id, delta };
      }
      yield { type: 'tool-input-end', id };
    }
    yield { type: 'tool-call', toolCallId: id, toolName: call.name, input };
  }
  if (response.disconnect === true || response.stall === true) return;
  yield {
    type: 'finish',
    finishReason: finishReasonOf(response),
    usage: usageOf(response.usage, chunks),
  };
}

function finishReasonOf(response: ScriptedResponse): LanguageModelV4FinishReason {
  const reason = response.finishReason;
  const fallback = (response.toolCalls?.length ?? 0) > 0 ? 'tool-calls' : 'stop';
  const { unified, raw } =
    reason === undefined || typeof reason === 'string'
      ? { unified: reason ?? fallback, raw: undefined }
      : reason;
  // A v4 model has no `unknown`; it reports an unexplained end as `other`.
  return { unified: unified === 'unknown' ? 'other' : unified, raw };
}

function usageOf(usage: Partial<Usage> | undefined, chunks: number): LanguageModelV4Usage {
  return {
    inputTokens: {
      total: usage?.inputTokens,
      noCache: undefined,
      cacheRead: usage?.cachedInputTokens,
      cacheWrite: undefined,
    },
    outputTokens: {
      total: usage === undefined ? chunks : usage.outputTokens,
      text: undefined,
      reasoning: usage?.reasoningTokens,
    },
  };
}

function generateResult(
  parts: readonly LanguageModelV4StreamPart[],
): LanguageModelV4GenerateResult {
  const content: LanguageModelV4Content[] = [];
  const result: LanguageModelV4GenerateResult = {
    content,
    finishReason: { unified: 'other', raw: undefined },
    usage: usageOf({}, 0),
    warnings: [],
  };
  for (const part of parts) {
    const last = content.at(-1);
    if (part.type === 'text-delta' || part.type === 'reasoning-delta') {
      const type = part.type === 'text-delta' ? 'text' : 'reasoning';
      if (last?.type === type) last.text += part.delta;
      else content.push({ type, text: part.delta });
    } else if (part.type === 'reasoning-end' && last?.type === 'reasoning') {
      if (part.providerMetadata !== undefined) last.providerMetadata = part.providerMetadata;
    } else if (part.type === 'tool-call') {
      content.push(part);
    } else if (part.type === 'response-metadata') {
      result.response = { id: part.id, modelId: part.modelId };
    } else if (part.type === 'finish') {
      result.finishReason = part.finishReason;
      result.usage = part.usage;
    }
  }
  return result;
}

function providerError(error: ScriptedError, call: LanguageModelV4CallOptions): APICallError {
  const body = typeof error.body === 'string' ? error.body : JSON.stringify(error.body ?? {});
  const status = error.status;
  return new APICallError({
    message: error.message ?? `Scripted provider error (HTTP ${status})`,
    url: 'scripted://model',
    requestBodyValues: { prompt: call.prompt },
    statusCode: status,
    responseHeaders: error.headers ?? {},
    responseBody: body,
    isRetryable: status === 408 || status === 409 || status === 429 || status >= 500,
  });
}

/** What undici throws when the server resets the connection mid-body. */
function socketReset(): Error {
  const cause = Object.assign(new Error('read ECONNRESET'), {
    code: 'ECONNRESET',
    syscall: 'read',
  });
  return new TypeError('terminated', { cause });
}

function untilAborted(signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    signal?.addEventListener('abort', () => resolve(), { once: true });
  });
}

function asChunks(text: string | string[]): string[] {
  return typeof text === 'string' ? [text] : text;
}

function splitEvery(text: string, size: number): string[] {
  const chunks: string[] = [];
  for (let index = 0; index < text.length; index += size)
    chunks.push(text.slice(index, index + size));
  return chunks.length === 0 ? [''] : chunks;
}
