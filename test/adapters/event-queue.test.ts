import { describe, expect, it } from 'vitest';
import { createEventQueue } from '../../adapters/event-queue.ts';

describe('createEventQueue', () => {
  it('delivers values pushed before and while the reader waits, then ends on close', async () => {
    const queue = createEventQueue<number>();
    queue.push(1);
    queue.push(2);
    const read = (async () => {
      const values: number[] = [];
      for await (const value of queue) values.push(value);
      return values;
    })();
    await Promise.resolve();
    queue.push(3);
    queue.close();
    queue.push(4);
    expect(await read).toEqual([1, 2, 3]);
  });

  it('still delivers buffered values to a reader that starts after close', async () => {
    const queue = createEventQueue<string>();
    queue.push('a');
    queue.close();
    const values: string[] = [];
    for await (const value of queue) values.push(value);
    expect(values).toEqual(['a']);
  });

  it('drops values pushed after the reader stopped early', async () => {
    const queue = createEventQueue<number>();
    queue.push(1);
    queue.push(2);
    for await (const value of queue) {
      expect(value).toBe(1);
      break;
    }
    queue.push(3);
    queue.close();
    const rest: number[] = [];
    for await (const value of queue) rest.push(value);
    expect(rest).toEqual([]);
  });
});
