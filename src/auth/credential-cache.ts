import type { AuthEpoch } from '../db/auth-epoch.ts';
import type { ReadRows } from '../db/reads.ts';
import { API_KEY_BY_HASH, type ApiKeyRow } from './credential-lookup.ts';

/**
 * API keys already read, reused only while the database says nothing has changed since.
 *
 * Every change that can end or alter what a credential may do (a key revoked or rotated, an
 * account deactivated, a member removed or their role changed, ...) advances `auth_epoch` in its
 * own transaction, by trigger, so no code path can forget to. A key row is read together with
 * the epoch, in one statement (one snapshot). A request uses a cached row only when the epoch as
 * of a moment *after the request arrived* (`AuthEpoch`: a shared read on PostgreSQL, the
 * triggers' notifications on the embedded database) is no later than the row's: then no such
 * change committed between the row's snapshot and the request, and a revocation that answered
 * before the request was sent is always seen, on every replica.
 */
export interface CredentialCache {
  /** The key row for `secretHash` as the database holds it now: cached, or read afresh. */
  apiKey(secretHash: string): Promise<ApiKeyRow | undefined>;
}

/** Rows kept at most; past it the cache starts over (a flood of distinct keys cannot grow it). */
const MAX_ENTRIES = 10_000;

export function createCredentialCache(reads: ReadRows, authEpoch: AuthEpoch): CredentialCache {
  // Each row with its epoch parsed once, not on every request that reuses it.
  let entries = new Map<string, { row: ApiKeyRow; epoch: bigint }>();
  return {
    async apiKey(secretHash) {
      const epoch = await authEpoch();
      const cached = entries.get(secretHash);
      if (cached && cached.epoch >= epoch) return cached.row;
      const [row] = await reads<ApiKeyRow>(API_KEY_BY_HASH, [secretHash]);
      if (!row) return undefined;
      if (entries.size >= MAX_ENTRIES) entries = new Map();
      entries.set(secretHash, { row, epoch: BigInt(row.epoch) });
      return row;
    },
  };
}
