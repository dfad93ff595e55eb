import { describe, expect, it } from 'vitest';
import { eachConcurrently } from '../../src/lib/concurrency.ts';

describe('eachConcurrently', () => {
  it('runs every item, never more than the limit at once, starting them in order', async () => {
    let running = 0;
    let most = 0;
    const started: number[] = [];
    await eachConcurrently([10, 11, 12, 13, 14, 15, 16], 3, async (item, index) => {
      expect(item - 10).toBe(index);
      started.push(item);
      most = Math.max(most, ++running);
      await new Promise((resolve) => setTimeout(resolve, 5));
      running--;
    });
    expect(started).toEqual([10, 11, 12, 13, 14, 15, 16]);
    expect(most).toBe(3);
  });

  it('starts no item once the signal aborts', async () => {
    const controller = new AbortController();
    const done: number[] = [];
    await eachConcurrently(
      [1, 2, 3, 4],
      1,
      async (item) => {
        done.push(item);
        if (item === 2) controller.abort();
      },
      controller.signal,
    );
    expect(done).toEqual([1, 2]);
  });

  it('does nothing for no items', async () => {
    await eachConcurrently([], 4, async () => {
      throw new Error('not called');
    });
  });
});
