/** A push-fed async iterable for one consumer: values buffer until read; `close()` ends it. */
export interface EventQueue<TValue> extends AsyncIterable<TValue> {
  push(value: TValue): void;
  close(): void;
}

/**
 * Creates an {@link EventQueue}. Pushing never blocks (a step must not wait for a slow or absent
 * reader); once the reader stops early, later values are dropped instead of buffered.
 */
export function createEventQueue<TValue>(): EventQueue<TValue> {
  const buffer: TValue[] = [];
  let closed = false;
  let detached = false;
  let wake: (() => void) | undefined;

  const notify = () => {
    const resume = wake;
    wake = undefined;
    resume?.();
  };

  return {
    push(value) {
      if (closed || detached) return;
      buffer.push(value);
      notify();
    },
    close() {
      closed = true;
      notify();
    },
    async *[Symbol.asyncIterator]() {
      try {
        while (true) {
          if (buffer.length > 0) {
            // Swap the buffer out so a long stream is not shifted element by element.
            const batch = buffer.splice(0, buffer.length);
            for (const value of batch) yield value;
            continue;
          }
          if (closed) return;
          await new Promise<void>((resolve) => {
            wake = resolve;
          });
        }
      } finally {
        detached = true;
        buffer.length = 0;
      }
    },
  };
}
