import { describe, expect, it } from 'vitest';
import { CRITERIA } from '../../../src/modules/readiness/catalogue.ts';
import { maturityLevel } from '../../../src/modules/readiness/levels.ts';

const L = (n: number) => ({ id: `l${n}`, level: n as 1 | 2 | 3 | 4 | 5 });
// Five criteria per level, so 80% is exactly four.
const criteria = [1, 2, 3, 4, 5].flatMap((level) => [1, 2, 3, 4, 5].map((i) => ({ id: `l${level}_${i}`, level: L(level).level })));
const pass = { numerator: 1, denominator: 1 };
const fail = { numerator: 0, denominator: 1 };
const report = (passing: Record<number, number>) =>
  Object.fromEntries(criteria.map((c) => [c.id, Number(c.id.split('_')[1]) <= (passing[c.level] ?? 0) ? pass : fail]));

describe('maturity levels', () => {
  it('starts every repository at level 1', () => {
    expect(maturityLevel(report({}), criteria)).toBe(1);
  });

  it('unlocks the next level at 80% of the previous level, and not below', () => {
    expect(maturityLevel(report({ 1: 3 }), criteria)).toBe(1);
    expect(maturityLevel(report({ 1: 4 }), criteria)).toBe(2);
    expect(maturityLevel(report({ 1: 5, 2: 4, 3: 4, 4: 4 }), criteria)).toBe(5);
  });

  it('needs every lower level: a strong level 3 does not skip a weak level 2', () => {
    expect(maturityLevel(report({ 1: 5, 2: 1, 3: 5, 4: 5 }), criteria)).toBe(2);
  });

  it('counts only full marks as passed, and missing criteria as failed', () => {
    const partial = { ...report({ 1: 5 }), l1_1: { numerator: 1, denominator: 2 }, l1_2: { numerator: 1, denominator: 2 } };
    expect(maturityLevel(partial, criteria)).toBe(1);
    const { l1_1: _gone, ...missingOne } = report({ 1: 5 });
    expect(maturityLevel(missingOne, criteria)).toBe(2);
  });

  it('has criteria at every level of the built-in catalogue, with unique ids', () => {
    expect(new Set(CRITERIA.map((c) => c.level))).toEqual(new Set([1, 2, 3, 4, 5]));
    expect(new Set(CRITERIA.map((c) => c.id)).size).toBe(CRITERIA.length);
  });
});
