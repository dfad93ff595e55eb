import type { ReadRows } from '../db/reads.ts';
import { API_KEY_BY_HASH, AUTH_EPOCH, type ApiKeyRow } from './credential-lookup.ts';

/**
 * API keys already read, reused only while the database says nothing has changed since.
 *
 * Every change that can end or alter what a credential may do (a key revoked or rotated, an
 * account deactivated, a member removed or their role changed, ...) advances `auth_epoch` in its
 * own transaction, by trigger, so no code path can forget to. A key row is read together with
 * the epoch, in one statement (one snapshot). A request uses a cached row only when an epoch read
 * that *started after the request arrived* returns no later epoch than the row's: then no such
 * change committed between the row's snapshot and the request, and a revocation that answered
 * before the request was sent is always seen, on every replica. That fence read is shared by
 * every request that arrives while the one before it is in flight, so under load a single small
 * read stands in for every request's credential lookup.
 */
export interface CredentialCache {
  /** The key row for `secretHash` as the database holds it now: cached, or read afresh. */
  apiKey(secretHash: string): Promise<ApiKeyRow | undefined>;
}

/** Rows kept at most; past it the cache starts over (a flood of distinct keys cannot grow it). */
const MAX_ENTRIES = 10_000;

export function createCredentialCache(reads: ReadRows): CredentialCache {
  let entries = new Map<string, ApiKeyRow>();
  let running: Promise<bigint> | undefined;
  let next: Promise<bigint> | undefined;

  function startRead(): Promise<bigint> {
    const read = reads<{ epoch: string }>(AUTH_EPOCH, []).then(([row]) => {
      if (!row) throw new Error('auth_epoch has no row: the database was not set up by agentplane migrate');
      return BigInt(row.epoch);
    });
    running = read;
    const done = () => {
      if (running === read) running = undefined;
    };
    read.then(done, done);
    return read;
  }

  /** The epoch, read by a statement that starts after this call. */
  function fence(): Promise<bigint> {
    if (!running) return startRead();
    // The read in flight may have started before this call: share the one that starts after it.
    const startNext = () => {
      next = undefined;
      return startRead();
    };
    next ??= running.then(startNext, startNext);
    return next;
  }

  return {
    async apiKey(secretHash) {
      const epoch = await fence();
      const cached = entries.get(secretHash);
      if (cached && BigInt(cached.epoch) >= epoch) return cached;
      const [row] = await reads<ApiKeyRow>(API_KEY_BY_HASH, [secretHash]);
      if (!row) return undefined;
      if (entries.size >= MAX_ENTRIES) entries = new Map();
      entries.set(secretHash, row);
      return row;
    },
  };
}
