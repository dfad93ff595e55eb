import type { Level } from './criteria/index.ts';

/** Share of a level's criteria that must pass for the next level to unlock. */
const UNLOCK_SHARE = 0.8;

type Scores = Record<string, { numerator: number; denominator: number }>;

/**
 * The maturity level of a report: every repository starts at level 1; level n+1 unlocks once
 * level n is reached and at least 80% of level n's criteria pass (full marks: numerator equals
 * denominator). A criterion missing from the report counts as not passed.
 */
export function maturityLevel(report: Scores, criteria: readonly { id: string; level: Level }[]): Level {
  let level: Level = 1;
  for (const current of [1, 2, 3, 4] as const) {
    const ids = criteria.filter((c) => c.level === current).map((c) => c.id);
    const passed = ids.filter((id) => report[id] !== undefined && report[id]!.numerator >= report[id]!.denominator).length;
    if (ids.length === 0 || passed < UNLOCK_SHARE * ids.length) break;
    level = (current + 1) as Level;
  }
  return level;
}
