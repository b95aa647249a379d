import { parseJsonEventStream } from '@ai-sdk/provider-utils';
import {
  createUIMessageStreamResponse,
  readUIMessageStream,
  type UIMessageChunk,
  uiMessageChunkSchema,
} from 'ai';
import type { TurnlogUIMessage } from '../../../adapters/ui/ui-message-types.ts';

/** What a `useChat` client made of one response. */
export interface ReadResult {
  /** The assistant message after the last chunk (`undefined` if no chunk changed it). */
  message: TurnlogUIMessage | undefined;
  /** Every chunk, as the client parsed it from the SSE body. */
  chunks: UIMessageChunk[];
  /** The `error` chunks' texts (and any stream error), as the client's `onError` got them. */
  errors: string[];
}

/**
 * Reads a UI message stream the way `useChat` does: through `createUIMessageStreamResponse`
 * (SSE over HTTP), the SDK's own chunk parser and schema, and its message reader. `message`
 * is the assistant message a continuation goes on with.
 */
export async function readLikeUseChat(
  stream: ReadableStream<UIMessageChunk>,
  message?: TurnlogUIMessage,
): Promise<ReadResult> {
  return readResponseLikeUseChat(createUIMessageStreamResponse({ stream }), message);
}

/** Reads an HTTP response of a UI message stream with the SDK's parser and reader. */
export async function readResponseLikeUseChat(
  response: Response,
  message?: TurnlogUIMessage,
): Promise<ReadResult> {
  const chunks: UIMessageChunk[] = [];
  const parsed = parseJsonEventStream({
    stream: response.body as ReadableStream<Uint8Array>,
    schema: uiMessageChunkSchema,
  }).pipeThrough(
    new TransformStream({
      transform(result, controller) {
        if (!result.success) throw result.error;
        chunks.push(result.value);
        controller.enqueue(result.value);
      },
    }),
  );
  const errors: string[] = [];
  let last: TurnlogUIMessage | undefined;
  for await (const snapshot of readUIMessageStream<TurnlogUIMessage>({
    ...(message === undefined ? {} : { message: structuredClone(message) }),
    stream: parsed,
    onError: (error) => errors.push(error instanceof Error ? error.message : String(error)),
  })) {
    last = snapshot;
  }
  return { message: last, chunks, errors };
}

/** The chunk types in order, deltas folded: `text-delta` × 3 reads as one `text-delta`. */
export function chunkTypes(chunks: readonly UIMessageChunk[]): string[] {
  const types: string[] = [];
  for (const chunk of chunks) {
    if (chunk.type.endsWith('-delta') && types.at(-1) === chunk.type) continue;
    types.push(chunk.type);
  }
  return types;
}

/** A copy of a message as a client would send it back: JSON, nothing undefined. */
export function asSent<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}
