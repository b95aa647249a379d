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
  let buffer: TValue[] = [];
  let readIndex = 0;
  let closed = false;
  let detached = false;
  let waiting: ((result: IteratorResult<TValue>) => void) | undefined;

  const done = (): IteratorResult<TValue> => ({ value: undefined, done: true });

  return {
    push(value) {
      if (closed || detached) return;
      if (waiting !== undefined) {
        const resolve = waiting;
        waiting = undefined;
        resolve({ value, done: false });
        return;
      }
      buffer.push(value);
    },
    close() {
      closed = true;
      const resolve = waiting;
      waiting = undefined;
      resolve?.(done());
    },
    [Symbol.asyncIterator]() {
      return {
        next(): Promise<IteratorResult<TValue>> {
          if (readIndex < buffer.length) {
            const value = buffer[readIndex++] as TValue;
            // Drop what was read once the buffer drains, instead of shifting element by element.
            if (readIndex === buffer.length) {
              buffer = [];
              readIndex = 0;
            }
            return Promise.resolve({ value, done: false });
          }
          if (closed || detached) return Promise.resolve(done());
          return new Promise((resolve) => {
            waiting = resolve;
          });
        },
        return(): Promise<IteratorResult<TValue>> {
          detached = true;
          buffer = [];
          readIndex = 0;
          return Promise.resolve(done());
        },
      };
    },
  };
}
