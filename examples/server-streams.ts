// The embedded server's streaming responses (examples/embedded-server.ts), as Web `Response`s
// that shutdown can end: a run's server-sent events end with `event: shutdown`; a UI message
// stream is cut (to a chat page that is a disconnect: it resumes from the log on the next start).

/** The streams open now, each with what stops it at shutdown. */
export class OpenStreams {
  readonly #stops = new Set<() => void>();

  /** Registers a stream's stop; returns what forgets it once the stream ended by itself. */
  add(stop: () => void): () => void {
    this.#stops.add(stop);
    return () => void this.#stops.delete(stop);
  }

  /** Stops every open stream. */
  stopAll(): void {
    for (const stop of [...this.#stops]) stop();
    this.#stops.clear();
  }
}

/**
 * A run's events as server-sent events until `run.ended`. A client that disconnects stops the
 * stream, not the run: it goes on and stays in the log.
 */
export function eventStreamResponse(
  events: AsyncIterable<{ type: string; seq?: number }>,
  open: OpenStreams,
): Response {
  const iterator = events[Symbol.asyncIterator]();
  const encoder = new TextEncoder();
  let forget: () => void = () => {};
  let finished = false;
  const finish = () => {
    finished = true;
    forget();
    Promise.resolve(iterator.return?.()).catch(() => {});
  };
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      forget = open.add(() => {
        if (finished) return;
        controller.enqueue(encoder.encode('event: shutdown\ndata: {}\n\n'));
        controller.close();
        finish();
      });
    },
    async pull(controller) {
      const next = await iterator.next();
      if (finished) return;
      if (next.done) {
        controller.close();
        return finish();
      }
      const event = next.value;
      const id = event.seq === undefined ? '' : `id: ${event.seq}\n`;
      controller.enqueue(
        encoder.encode(`event: ${event.type}\n${id}data: ${JSON.stringify(event)}\n\n`),
      );
    },
    cancel: finish,
  });
  return new Response(body, {
    headers: {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
    },
  });
}

/** `response` with a body that shutdown cuts (the client sees the connection drop). */
export function cutAtShutdown(response: Response, open: OpenStreams): Response {
  if (response.body === null) return response;
  const reader = response.body.getReader();
  let forget: () => void = () => {};
  let cut = false;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      forget = open.add(() => {
        cut = true;
        controller.error(new Error('The server is shutting down.'));
        reader.cancel().catch(() => {});
      });
    },
    async pull(controller) {
      const next = await reader.read().catch((error: unknown) => ({ error }));
      if (cut) return;
      if ('error' in next) return controller.error(next.error);
      if (next.done) {
        forget();
        return controller.close();
      }
      controller.enqueue(next.value);
    },
    cancel(reason) {
      forget();
      return reader.cancel(reason);
    },
  });
  return new Response(body, { status: response.status, headers: response.headers });
}
