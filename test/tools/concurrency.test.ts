import { describe, expect, it } from 'vitest';
import { createKeyedLimiter } from '../../tools/concurrency.ts';

describe('createKeyedLimiter', () => {
  it('grants up to the limit per key, then hands released slots over in FIFO order', async () => {
    const limiter = createKeyedLimiter();
    const releaseA = await limiter.acquire({ key: 'run_1', limit: 2 });
    const releaseB = await limiter.acquire({ key: 'run_1', limit: 2 });
    const other = await limiter.acquire({ key: 'run_2', limit: 2 });
    const order: string[] = [];
    const third = limiter.acquire({ key: 'run_1', limit: 2 }).then((release) => {
      order.push('third');
      return release;
    });
    const fourth = limiter.acquire({ key: 'run_1', limit: 2 }).then((release) => {
      order.push('fourth');
      return release;
    });
    await Promise.resolve();
    expect(order).toEqual([]);
    expect(limiter.active('run_1')).toBe(2);
    releaseA();
    releaseA(); // a second call to one release function is ignored
    (await third)();
    releaseB();
    (await fourth)();
    expect(order).toEqual(['third', 'fourth']);
    expect(limiter.active('run_1')).toBe(0);
    other();
    expect(limiter.active('run_2')).toBe(0);
  });

  it('rejects a waiter whose signal aborts, and leaves the queue intact', async () => {
    const limiter = createKeyedLimiter();
    const release = await limiter.acquire({ key: 'run_1', limit: 1 });
    const controller = new AbortController();
    const abandoned = limiter.acquire({ key: 'run_1', limit: 1, signal: controller.signal });
    const next = limiter.acquire({ key: 'run_1', limit: 1 });
    controller.abort(new Error('stopped'));
    await expect(abandoned).rejects.toThrow('stopped');
    release();
    (await next)();
    expect(limiter.active('run_1')).toBe(0);
  });

  it('rejects at once when the signal already aborted', async () => {
    const limiter = createKeyedLimiter();
    await expect(
      limiter.acquire({ key: 'k', limit: 1, signal: AbortSignal.abort('gone') }),
    ).rejects.toBe('gone');
    expect(limiter.active('k')).toBe(0);
  });
});
