import { readFileSync } from 'node:fs';
import { assertNever } from '../../events/facts.ts';

/**
 * A fake `fetch` for replaying recorded provider streams through the real provider packages
 * (`createOpenAI({ apiKey: 'test', fetch })`, `createGoogleGenerativeAI({ apiKey: 'test', fetch })`),
 * with fault injection. Each response is plain data, so a new fault is one more case here.
 */

/** What goes wrong with a streamed body. */
export type StreamFault =
  /** The socket resets after `afterLines` frames; `midFrame` sends half of the next frame first. */
  | { kind: 'reset'; afterLines: number; midFrame?: boolean }
  /** The body stops after `afterLines` frames and never ends (until the request is aborted). */
  | { kind: 'stall'; afterLines: number }
  /** Frame `atLine` (0-based) is replaced by text that is not JSON. */
  | { kind: 'malformed'; atLine: number; text?: string };

/** One scripted HTTP outcome. */
export type FakeResponse =
  | {
      kind: 'sse';
      /** One JSON payload per line, each framed as `data: <line>\n\n`. */
      lines: readonly string[];
      /** Append `data: [DONE]` (OpenAI streams end with it). */
      done?: boolean;
      fault?: StreamFault;
      headers?: Record<string, string>;
    }
  | { kind: 'http-error'; status: number; body: unknown; headers?: Record<string, string> }
  /** The connection fails before any byte (`fetch` rejects, as undici does). */
  | { kind: 'connection-error'; code?: string }
  /** No response ever arrives: `fetch` stays pending until the request is aborted. */
  | { kind: 'hang' };

export interface RecordedFetchRequest {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: unknown;
  /** The request's abort signal, so a test can check that a stop reached the wire. */
  signal: AbortSignal | undefined;
}

export interface FakeFetch {
  fetch: typeof globalThis.fetch;
  requests: RecordedFetchRequest[];
  /** Resolves with request `count` (1-based) once it was made (at once if it already was). */
  request(count: number): Promise<RecordedFetchRequest>;
}

/** Serves `responses` in order (or computes each from the request). Running out is an error. */
export function createFakeFetch(
  responses:
    | readonly FakeResponse[]
    | ((request: RecordedFetchRequest, index: number) => FakeResponse),
): FakeFetch {
  const requests: RecordedFetchRequest[] = [];
  const waiting: { count: number; resolve: (request: RecordedFetchRequest) => void }[] = [];
  const fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const request: RecordedFetchRequest = {
      url: input instanceof Request ? input.url : String(input),
      method: init?.method ?? 'GET',
      headers: Object.fromEntries(new Headers(init?.headers).entries()),
      body: typeof init?.body === 'string' ? JSON.parse(init.body) : init?.body,
      signal: init?.signal ?? undefined,
    };
    requests.push(request);
    for (const waiter of waiting.filter((candidate) => candidate.count === requests.length)) {
      waiter.resolve(request);
    }
    const index = requests.length - 1;
    const response = typeof responses === 'function' ? responses(request, index) : responses[index];
    if (response === undefined) {
      throw new Error(`createFakeFetch: request ${index + 1} has no scripted response`);
    }
    const signal = init?.signal ?? undefined;
    if (signal?.aborted) throw signal.reason;
    switch (response.kind) {
      case 'connection-error':
        throw connectionError(response.code ?? 'ECONNREFUSED');
      case 'hang':
        return new Promise<Response>((_resolve, reject) => {
          signal?.addEventListener('abort', () => reject(signal.reason), { once: true });
        });
      case 'http-error':
        return new Response(
          typeof response.body === 'string' ? response.body : JSON.stringify(response.body),
          {
            status: response.status,
            headers: { 'content-type': 'application/json', ...response.headers },
          },
        );
      case 'sse':
        return new Response(sseBody(response, signal), {
          status: 200,
          headers: { 'content-type': 'text/event-stream', ...response.headers },
        });
      default:
        return assertNever(response, 'fake response');
    }
  };
  return {
    fetch: fetch as typeof globalThis.fetch,
    requests,
    request(count) {
      const made = requests[count - 1];
      if (made !== undefined) return Promise.resolve(made);
      return new Promise((resolve) => waiting.push({ count, resolve }));
    },
  };
}

/** An SSE response for `lines`. */
export function sse(
  lines: readonly string[],
  options: { done?: boolean; fault?: StreamFault } = {},
): FakeResponse {
  return { kind: 'sse', lines, ...options };
}

/** An HTTP error with a JSON body in OpenAI's shape. */
export function openaiError(
  status: number,
  error: { message: string; type?: string; code?: string },
  headers?: Record<string, string>,
): FakeResponse {
  return { kind: 'http-error', status, body: { error: { param: null, ...error } }, headers };
}

/** An HTTP error with a JSON body in Gemini's shape (`retryDelay` becomes a `RetryInfo` detail). */
export function googleError(
  status: number,
  error: { message: string; status: string; retryDelay?: string },
  headers?: Record<string, string>,
): FakeResponse {
  const details =
    error.retryDelay === undefined
      ? []
      : [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: error.retryDelay }];
  return {
    kind: 'http-error',
    status,
    body: { error: { code: status, message: error.message, status: error.status, details } },
    headers,
  };
}

/** Lines of a recorded stream in `test/fixtures/provider-streams/`. */
export function loadFixture(name: string): string[] {
  const url = new URL(`../fixtures/provider-streams/${name}.chunks.txt`, import.meta.url);
  return readFileSync(url, 'utf8')
    .split('\n')
    .filter((line) => line.trim().length > 0);
}

/** Splits a recording of several OpenAI Responses streams at each terminal event. */
export function splitOpenAIResponses(lines: readonly string[]): string[][] {
  const responses: string[][] = [[]];
  for (const line of lines) {
    responses.at(-1)?.push(line);
    const type = (JSON.parse(line) as { type?: string }).type;
    if (type === 'response.completed' || type === 'response.incomplete') responses.push([]);
  }
  return responses.filter((response) => response.length > 0);
}

/** An OpenAI Responses recording whose terminal event becomes `response.incomplete`. */
export function openaiIncomplete(lines: readonly string[], reason = 'max_output_tokens'): string[] {
  return lines.map((line) => {
    const event = JSON.parse(line) as { type?: string; response?: Record<string, unknown> };
    if (event.type !== 'response.completed') return line;
    return JSON.stringify({
      ...event,
      type: 'response.incomplete',
      response: { ...event.response, status: 'incomplete', incomplete_details: { reason } },
    });
  });
}

/** A Gemini recording whose finishing chunk reports `finishReason` instead (e.g. `MAX_TOKENS`). */
export function geminiFinishReason(lines: readonly string[], finishReason: string): string[] {
  return lines.map((line) => {
    const chunk = JSON.parse(line) as { candidates?: Record<string, unknown>[] };
    const [candidate] = chunk.candidates ?? [];
    if (candidate?.finishReason === undefined) return line;
    return JSON.stringify({ ...chunk, candidates: [{ ...candidate, finishReason }] });
  });
}

/** A Chat Completions recording whose finishing chunk reports `finishReason` instead (e.g. `length`). */
export function chatFinishReason(lines: readonly string[], finishReason: string): string[] {
  return lines.map((line) => {
    const chunk = JSON.parse(line) as { choices?: Record<string, unknown>[] };
    const [choice] = chunk.choices ?? [];
    if (choice?.finish_reason == null) return line;
    return JSON.stringify({ ...chunk, choices: [{ ...choice, finish_reason: finishReason }] });
  });
}

/**
 * A Chat Completions recording whose whole tool calls (one chunk carrying id, name and all
 * arguments, as xAI sends them) are re-sent the way OpenAI streams them: a chunk with the id,
 * the name and empty arguments, then the arguments in `pieces` deltas. Other chunks are unchanged.
 */
export function chatToolArgumentDeltas(lines: readonly string[], pieces = 4): string[] {
  return lines.flatMap((line) => {
    const chunk = JSON.parse(line) as { choices?: { delta?: { tool_calls?: ChatToolCall[] } }[] };
    const [choice, ...otherChoices] = chunk.choices ?? [];
    const calls = choice?.delta?.tool_calls;
    if (choice === undefined || otherChoices.length > 0 || calls === undefined) return [line];
    const withDelta = (delta: object) =>
      JSON.stringify({ ...chunk, choices: [{ ...choice, delta }] });
    return calls.flatMap((call) => {
      const { arguments: text, ...fn } = call.function;
      const size = Math.max(1, Math.ceil(text.length / pieces));
      const deltas = Array.from({ length: Math.ceil(text.length / size) }, (_, piece) =>
        withDelta({
          tool_calls: [
            {
              index: call.index,
              function: { arguments: text.slice(piece * size, (piece + 1) * size) },
            },
          ],
        }),
      );
      return [
        withDelta({ tool_calls: [{ ...call, function: { ...fn, arguments: '' } }] }),
        ...deltas,
      ];
    });
  });
}

interface ChatToolCall {
  index: number;
  id?: string;
  type?: string;
  function: { name?: string; arguments: string };
}

function sseBody(
  response: Extract<FakeResponse, { kind: 'sse' }>,
  signal: AbortSignal | undefined,
): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  const { fault } = response;
  const frames = response.lines.map((line, index) =>
    fault?.kind === 'malformed' && fault.atLine === index
      ? `data: ${fault.text ?? '{"truncated": '}\n\n`
      : `data: ${line}\n\n`,
  );
  let index = 0;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (signal?.aborted) return controller.error(signal.reason);
      if ((fault?.kind === 'reset' || fault?.kind === 'stall') && index === fault.afterLines) {
        if (fault.kind === 'stall') {
          await new Promise<void>((resolve) => {
            signal?.addEventListener('abort', () => resolve(), { once: true });
          });
          return controller.error(signal?.reason);
        }
        const next = frames[index];
        if (fault.midFrame === true && next !== undefined) {
          controller.enqueue(encoder.encode(next.slice(0, Math.ceil(next.length / 2))));
        }
        return controller.error(socketReset());
      }
      const frame = frames[index++];
      if (frame !== undefined) return controller.enqueue(encoder.encode(frame));
      if (response.done === true && index === frames.length + 1) {
        return controller.enqueue(encoder.encode('data: [DONE]\n\n'));
      }
      controller.close();
    },
  });
}

function socketReset(): Error {
  const cause = Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' });
  return new TypeError('terminated', { cause });
}

function connectionError(code: string): Error {
  const cause = Object.assign(new Error(`connect ${code} 127.0.0.1:443`), { code });
  return new TypeError('fetch failed', { cause });
}
