import type { Db } from '../../../db/client.ts';
import type { ComputersDeps } from '../deps.ts';
import { transition } from '../lifecycle.ts';
import { scheduleTeardown } from '../retire.ts';
import { POOL_OWNER } from './pools.ts';

/**
 * Destroys a pool computer inside the caller's transaction, if it is still the pool's and in the
 * operation the caller saw (`null` when idle, `provision`, or a `claim` given up): hidden, its key
 * dropped, its teardown queued as for a deleted computer. No one is told: no one owned it.
 */
export async function retirePoolComputer(
  tx: Db,
  deps: Pick<ComputersDeps, 'queue' | 'managed'>,
  computerId: string,
  operation: string | null,
  now: Date,
): Promise<boolean> {
  const retired = await transition(tx, computerId, {
    from: { ownerKind: POOL_OWNER.kind, deletedAt: null, operation },
    to: { deletedAt: now, liveName: null, updatedAt: now },
  });
  if (!retired) return false;
  await scheduleTeardown(tx, deps, { id: computerId }, now);
  return true;
}
