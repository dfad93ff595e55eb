import type { App } from '../apps.ts';
import type { RepoContext } from '../repo-context.ts';

export interface Score {
  numerator: number;
  denominator: number;
  /** Names the evidence: which files, sections or commands the score rests on. */
  rationale: string;
}

export type Level = 1 | 2 | 3 | 4 | 5;

export interface Criterion {
  /** Report key, snake_case (`lint_config`). */
  id: string;
  /** The maturity level this criterion counts toward. */
  level: Level;
  title: string;
  evaluate(ctx: RepoContext): Promise<Score>;
}

/** One application's verdict in a per-application criterion. */
export interface AppVerdict {
  ok: boolean;
  evidence: string;
}

export type { App };
