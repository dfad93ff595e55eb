import type { Criterion } from './types.ts';

const CI_FILE =
  /^(\.github\/workflows\/[^/]+\.ya?ml|\.gitlab-ci\.yml|\.circleci\/config\.yml|Jenkinsfile|azure-pipelines\.yml|bitbucket-pipelines\.yml|\.drone\.yml|\.travis\.yml|\.buildkite\/[^/]+\.ya?ml|\.woodpecker\.ya?ml|\.woodpecker\/[^/]+\.ya?ml)$/;
/** A step that runs tests, as CI configurations write it. */
const RUNS_TESTS = /\b(test|tests|pytest|vitest|jest|mocha|rspec|phpunit|ctest|tox|nox|check)\b/;

/** Continuous integration that runs the tests on every change. */
export const ciWorkflows: Criterion = {
  id: 'ci_workflows',
  level: 4,
  title: 'CI workflows',
  async evaluate(ctx) {
    const files = ctx.files.filter((f) => CI_FILE.test(f));
    if (files.length === 0) return { numerator: 0, denominator: 2, rationale: 'No CI configuration (.github/workflows, .gitlab-ci.yml, ...)' };
    for (const file of files) {
      const text = (await ctx.read(file)) ?? '';
      const runs = text.split('\n').find((l) => /\b(run|script|command|sh)\b|^\s*-\s/.test(l) && RUNS_TESTS.test(l));
      if (runs) return { numerator: 2, denominator: 2, rationale: `${file} runs tests: \`${runs.trim().slice(0, 120)}\`` };
    }
    return { numerator: 1, denominator: 2, rationale: `CI configured in ${files.join(', ')}, but no step runs tests` };
  },
};
