/**
 * The maturity levels of readiness reports, as the server's evaluator computes them
 * (src/modules/readiness/levels.ts; docs/readiness.md): a report carries no level on the wire.
 * test/e2e/console-client.test.ts checks this copy against the server's catalogue and rule.
 */
export const CRITERION_LEVELS: Record<string, 1 | 2 | 3 | 4 | 5> = {
  readme: 1,
  gitignore: 1,
  lockfile: 1,
  build_command: 1,
  tests_present: 1,
  setup_docs: 2,
  agent_instructions: 2,
  code_owners: 2,
  lint_config: 3,
  formatter: 3,
  type_check: 3,
  secrets_hygiene: 3,
  ci_workflows: 4,
  tests_runnable: 4,
  pre_commit_hooks: 4,
  dev_environment: 5,
  dependency_updates: 5,
};

export const LEVEL_NAMES = { 1: 'Functional', 2: 'Documented', 3: 'Standardized', 4: 'Optimized', 5: 'Autonomous' } as const;

const UNLOCK_SHARE = 0.8;

type Scores = Record<string, { numerator: number; denominator: number }>;

/** Level n+1 unlocks once level n is reached and at least 80% of level n's criteria pass with full marks. */
export function maturityLevel(report: Scores): 1 | 2 | 3 | 4 | 5 {
  let level: 1 | 2 | 3 | 4 | 5 = 1;
  for (const current of [1, 2, 3, 4] as const) {
    const ids = Object.keys(CRITERION_LEVELS).filter((id) => CRITERION_LEVELS[id] === current);
    const passed = ids.filter((id) => report[id] !== undefined && report[id].numerator >= report[id].denominator).length;
    if (ids.length === 0 || passed < UNLOCK_SHARE * ids.length) break;
    level = (current + 1) as 1 | 2 | 3 | 4 | 5;
  }
  return level;
}
