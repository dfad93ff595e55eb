import * as c from './criteria/index.ts';
import type { Criterion } from './criteria/index.ts';

/** Every criterion the built-in evaluator scores, by level (docs/readiness.md lists the same). */
export const CRITERIA: readonly Criterion[] = [
  c.readme,
  c.gitignore,
  c.lockfile,
  c.buildCommand,
  c.testsPresent,
  c.setupDocs,
  c.agentInstructions,
  c.codeOwners,
  c.lintConfig,
  c.formatter,
  c.typeCheck,
  c.secretsHygiene,
  c.ciWorkflows,
  c.testsRunnable,
  c.preCommitHooks,
  c.devEnvironment,
  c.dependencyUpdates,
];
