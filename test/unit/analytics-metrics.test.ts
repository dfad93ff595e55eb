import { describe, expect, it } from 'vitest';
import { addDays, historyStart, isCalendarDate } from '../../src/modules/analytics/dates.ts';
import { autonomyRatio, billableTokens, byCountThenKey, delegationLevel, percentile } from '../../src/modules/analytics/metrics.ts';

describe('analytics definitions', () => {
  it('bills input, output and cache writes in full and cache reads at a tenth, rounded', () => {
    expect(billableTokens({ input: 1000, output: 500, cacheRead: 2000, cacheWrite: 100 })).toBe(1800);
    expect(billableTokens({ input: 0, output: 0, cacheRead: 14, cacheWrite: 0 })).toBe(1);
  });

  it('takes percentiles by linear interpolation, like percentile_cont', () => {
    expect(percentile([], 0.5)).toBe(0);
    expect(percentile([3], 0.9)).toBe(3);
    expect(percentile([2.5, 2], 0.5)).toBe(2.25);
    expect(percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 0.9)).toBeCloseTo(9.1, 10);
  });

  it('divides tool calls by user turns, 0 without turns', () => {
    expect(autonomyRatio(5, 2)).toBe(2.5);
    expect(autonomyRatio(3, 0)).toBe(0);
  });

  it('picks the most used autonomy level, ties to the more autonomous, manual without calls', () => {
    expect(
      delegationLevel(
        new Map([
          ['manual', 1],
          ['auto-low', 1],
        ]),
      ),
    ).toBe('auto-low');
    expect(
      delegationLevel(
        new Map([
          ['spec', 3],
          ['auto-high', 2],
        ]),
      ),
    ).toBe('spec');
    expect(delegationLevel(new Map())).toBe('manual');
  });

  it('orders breakdowns by count, then key', () => {
    expect(
      byCountThenKey(
        new Map([
          ['b', 1],
          ['a', 1],
          ['c', 2],
        ]),
      ),
    ).toEqual([
      ['c', 2],
      ['a', 1],
      ['b', 1],
    ]);
  });

  it('checks real calendar dates and starts history at creation, not before 2026-01-14', () => {
    expect(isCalendarDate('2028-02-29')).toBe(true);
    expect(isCalendarDate('2026-02-29')).toBe(false);
    expect(isCalendarDate('2026-1-01')).toBe(false);
    expect(addDays('2026-02-28', 1)).toBe('2026-03-01');
    expect(historyStart(new Date('2025-06-01T00:00:00Z'), null)).toBe('2026-01-14');
    expect(historyStart(new Date('2026-03-05T23:00:00Z'), null)).toBe('2026-03-05');
    expect(historyStart(new Date('2026-03-05T23:00:00Z'), '2026-02-01')).toBe('2026-02-01');
  });
});
