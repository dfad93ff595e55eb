import type { ProgramPool } from './pools.ts';

/** A program pool's member as the roll sees it. */
export interface RollMember {
  id: string;
  versionId: string | null;
  /** Active and idle: could be claimed now. Otherwise still provisioning. */
  ready: boolean;
  createdAt: Date;
}

export interface RollInput extends ProgramPool {
  size: number;
  /** The template's versions whose preview passed: the only ones a member may run. */
  usable: ReadonlySet<string>;
}

/** What one convergence does to a program pool. */
export interface RollPlan {
  /** Members to destroy now (a failed version's, a surplus, or old ones the strategy replaces). */
  retire: RollMember[];
  /** New members to provision, at the current version. */
  add: number;
  /** Old members remain that the strategy will replace: converge again soon. */
  rolling: boolean;
}

const oldestFirst = (a: RollMember, b: RollMember) => a.createdAt.getTime() - b.createdAt.getTime() || a.id.localeCompare(b.id);

/**
 * The decision of one convergence of a program template's warm pool, from what is stored only (so
 * a control plane killed between two steps decides the same again):
 * - a member whose version did not pass its preview is destroyed (it is never claimed either);
 * - above the size, provisioning members go first, then old ones, the newest first;
 * - `Recreate`: every member of an older version goes now, the pool refills at the current one;
 * - `OnReplenish`: old members serve until claimed; only new members get the current version;
 * - `RollingUpdate`: old members being provisioned go now (they serve no one), ready old ones go
 *   as many at a time as keep at most `maxUnavailable` of `size` not ready, so the next ones go
 *   only once their replacements are ready;
 * then the pool is filled to its size at the current version (none while there is no current version).
 */
export function planRoll(pool: RollInput, members: RollMember[]): RollPlan {
  const current = pool.currentVersionId;
  const isOld = (m: RollMember) => current !== null && m.versionId !== current;
  const retire: RollMember[] = [];
  const drop = (gone: RollMember[]) => {
    retire.push(...gone);
    live = live.filter((m) => !gone.includes(m));
  };
  let live = [...members];
  drop(live.filter((m) => m.versionId === null || !pool.usable.has(m.versionId)));
  if (live.length > pool.size) {
    const surplus = [...live].sort((a, b) => Number(a.ready) - Number(b.ready) || Number(isOld(b)) - Number(isOld(a)) || oldestFirst(b, a));
    drop(surplus.slice(0, live.length - pool.size));
  }
  if (pool.update === 'Recreate') drop(live.filter(isOld));
  if (pool.update === 'RollingUpdate') {
    drop(live.filter((m) => isOld(m) && !m.ready));
    const unavailable = Math.max(0, pool.size - live.filter((m) => m.ready).length);
    const room = Math.max(0, pool.maxUnavailable - unavailable);
    drop(live.filter(isOld).sort(oldestFirst).slice(0, room));
  }
  const add = current === null ? 0 : Math.max(0, pool.size - live.length);
  return { retire, add, rolling: pool.update !== 'OnReplenish' && live.some(isOld) };
}
