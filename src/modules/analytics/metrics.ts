/**
 * The exact definitions behind the analytics numbers, as pure functions so they are stated once
 * and unit-tested.
 */

export const CLIENTS = ['terminal-ui', 'web', 'non-interactive-cli'] as const;
export type Client = (typeof CLIENTS)[number];

export const MODEL_TIERS = ['standard', 'thinking'] as const;
export type ModelTier = (typeof MODEL_TIERS)[number];

/** Most to least autonomous; `spec` is plan-only (read-only) mode. */
export const AUTONOMY_LEVELS = ['auto-high', 'auto-medium', 'auto-low', 'spec', 'manual'] as const;
export type AutonomyLevel = (typeof AUTONOMY_LEVELS)[number];

/**
 * How many users a /tokens day row lists in `by_user`: the day's largest by billable tokens. Every
 * user's tokens stay in the day's totals and `by_model`, and in their own /users rows.
 */
export const BY_USER_TOP = 10;

export interface TokenCounts {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
}

/**
 * Standard credits: input and output tokens at full price, cache writes at full price, cache
 * reads at a tenth (the providers' usual cache-hit discount), rounded to a whole token. Applied to
 * one user's usage of one model on one day, so every total is a sum of the same integers.
 */
export function billableTokens(t: TokenCounts): number {
  return t.input + t.output + t.cacheWrite + Math.round(t.cacheRead / 10);
}

/** Linear-interpolation percentile (PostgreSQL's percentile_cont); 0 for no values. */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = p * (sorted.length - 1);
  const lo = Math.floor(rank);
  const hi = Math.ceil(rank);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (rank - lo);
}

export function mean(values: number[]): number {
  return values.length === 0 ? 0 : values.reduce((a, b) => a + b, 0) / values.length;
}

/** Tool calls per user turn; 0 without user turns (the calls cannot be attributed to a request). */
export function autonomyRatio(toolCalls: number, userTurns: number): number {
  return userTurns > 0 ? toolCalls / userTurns : 0;
}

/**
 * The autonomy level most of a user's tool calls ran under; ties go to the more autonomous
 * level; a user without tool calls delegated nothing: `manual`.
 */
export function delegationLevel(callsByLevel: ReadonlyMap<string, number>): AutonomyLevel {
  let best: AutonomyLevel = 'manual';
  let bestCount = 0;
  for (const level of AUTONOMY_LEVELS) {
    const n = callsByLevel.get(level) ?? 0;
    if (n > bestCount) {
      best = level;
      bestCount = n;
    }
  }
  return best;
}

/** Entries sorted by count (descending), then key, the order of every breakdown array. */
export function byCountThenKey<K extends string>(counts: ReadonlyMap<K, number>): [K, number][] {
  return [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
}
