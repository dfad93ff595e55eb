import type { AuthEpoch } from './auth-epoch.ts';
import type { ReadRows, Statement } from './reads.ts';

/**
 * Rows already read, reused only while the database says nothing they depend on has changed since.
 *
 * Every change that can end or alter what a credential may do (a key revoked or rotated, an
 * account deactivated, a member removed or their role changed, ...) or change an organization's
 * service-account list advances `auth_epoch` in its own transaction, by trigger, so no code path
 * can forget to. A cached row is read together with the epoch, in one statement (one snapshot).
 * A request reuses it only when the epoch as of a moment *after the request arrived* (the
 * request's fence: an `AuthEpoch`) is no later than the row's: then no such change committed
 * between the row's snapshot and the request, and a change that answered before the request was
 * sent is always seen, on every replica.
 */
export interface FencedCache<V> {
  /** The value for `key` as the database holds it as of `fence`: cached, or read afresh. */
  get(key: string, fence: AuthEpoch): Promise<V | undefined>;
}

export interface Fenced<V> {
  value: V;
  /** `auth_epoch` in the snapshot the value was read from. */
  epoch: bigint;
}

/**
 * `load` reads a key's value with the epoch of its snapshot (undefined: nothing to cache). At most
 * `maxEntries` values are kept; past it the cache starts over, so a flood of distinct keys cannot
 * grow it.
 */
export function createFencedCache<V>(load: (key: string) => Promise<Fenced<V> | undefined>, maxEntries: number): FencedCache<V> {
  let entries = new Map<string, Fenced<V>>();
  return {
    async get(key, fence) {
      const epoch = await fence();
      const cached = entries.get(key);
      if (cached && cached.epoch >= epoch) return cached.value;
      const loaded = await load(key);
      if (!loaded) return undefined;
      // A slower read of an older snapshot never replaces a newer one.
      const current = entries.get(key);
      if (!current || current.epoch < loaded.epoch) {
        if (!current && entries.size >= maxEntries) entries = new Map();
        entries.set(key, loaded);
      }
      return loaded.value;
    },
  };
}

/**
 * A `load` for a statement that takes the key as its one parameter and answers at most one row,
 * with the epoch of its snapshot in an `epoch` column (`(SELECT epoch::text FROM auth_epoch WHERE
 * id = 1) AS epoch`). `toValue` turns the row into what is kept, once per read.
 */
export function rowWithEpoch<R extends { epoch: string }, V>(
  reads: ReadRows,
  statement: Statement,
  toValue: (row: R) => V,
): (key: string) => Promise<Fenced<V> | undefined> {
  return async (key) => {
    const [row] = await reads<R>(statement, [key]);
    return row && { value: toValue(row), epoch: BigInt(row.epoch) };
  };
}
