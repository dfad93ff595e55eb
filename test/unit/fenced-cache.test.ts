import { describe, expect, it } from 'vitest';
import { requestFence } from '../../src/db/auth-epoch.ts';
import { createFencedCache, type Fenced } from '../../src/db/fenced-cache.ts';

/** A store whose values and epoch the test sets; every load is counted and may be held back. */
function store() {
  const values = new Map<string, string>();
  let epoch = 0n;
  const loads: string[] = [];
  return {
    values,
    loads,
    fence: () => Promise.resolve(epoch),
    commit(key: string, value: string) {
      values.set(key, value);
      epoch++;
    },
    load: async (key: string): Promise<Fenced<string> | undefined> => {
      loads.push(key);
      const value = values.get(key);
      return value === undefined ? undefined : { value, epoch };
    },
  };
}

describe('a fenced cache', () => {
  it('reuses a value until a later epoch, then reads it again', async () => {
    const s = store();
    s.commit('a', 'one');
    const cache = createFencedCache(s.load, 10);
    expect(await cache.get('a', s.fence)).toBe('one');
    expect(await cache.get('a', s.fence)).toBe('one');
    expect(s.loads).toEqual(['a']);
    s.commit('b', 'unrelated');
    expect(await cache.get('a', s.fence)).toBe('one');
    expect(s.loads).toEqual(['a', 'a']);
    s.commit('a', 'two');
    expect(await cache.get('a', s.fence)).toBe('two');
  });

  it('keeps nothing for a key the store does not have', async () => {
    const s = store();
    const cache = createFencedCache(s.load, 10);
    expect(await cache.get('missing', s.fence)).toBeUndefined();
    s.commit('missing', 'now here');
    expect(await cache.get('missing', s.fence)).toBe('now here');
  });

  it('never replaces a value with one read from an older snapshot', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const answers: Fenced<string>[] = [
      { value: 'old', epoch: 1n },
      { value: 'new', epoch: 2n },
    ];
    let call = 0;
    const cache = createFencedCache(async () => {
      const answer = answers[call++]!;
      if (answer.value === 'old') await held; // the older read answers last
      return answer;
    }, 10);
    const slow = cache.get('k', () => Promise.resolve(1n));
    expect(await cache.get('k', () => Promise.resolve(2n))).toBe('new');
    release();
    expect(await slow).toBe('old');
    expect(await cache.get('k', () => Promise.resolve(2n))).toBe('new');
    expect(call).toBe(2);
  });

  it('starts over past its size instead of growing', async () => {
    const s = store();
    for (const key of ['a', 'b', 'c']) s.commit(key, key);
    const cache = createFencedCache(s.load, 2);
    for (const key of ['a', 'b', 'c', 'a']) await cache.get(key, s.fence);
    expect(s.loads).toEqual(['a', 'b', 'c', 'a']);
  });
});

describe('a request fence', () => {
  it('reads the epoch once, on first use', async () => {
    let reads = 0;
    const fence = requestFence(async () => BigInt(++reads));
    expect(reads).toBe(0);
    expect(await Promise.all([fence(), fence()])).toEqual([1n, 1n]);
    expect(await fence()).toBe(1n);
    expect(reads).toBe(1);
  });
});
