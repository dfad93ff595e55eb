import { filesMatching, list, perApp } from './evidence.ts';
import type { Criterion } from './types.ts';

const SOURCE = /\.(c|m)?[jt]sx?$|\.(py|go|rs|rb|java|kt|kts|scala|php|cs|swift|ex|exs|c|cc|cpp|h|sh|bats)$/;
/** Test files by the conventions of the common test runners. */
const TEST_FILE = new RegExp(
  [
    String.raw`(^|/)(test|tests|__tests__|spec|specs|e2e)/`,
    String.raw`\.(test|spec)\.[cm]?[jt]sx?$`,
    String.raw`_test\.(go|py|exs)$`,
    String.raw`(^|/)test_[^/]+\.py$`,
    String.raw`_spec\.rb$`,
    String.raw`(^|/)src/test/`,
    String.raw`Tests?\.(java|kt|cs|swift)$`,
  ].join('|'),
);

export function testFiles(files: string[]): string[] {
  return files.filter((f) => SOURCE.test(f) && TEST_FILE.test(f) && !/(^|\/)(node_modules|vendor)\//.test(f));
}

/** Each application has automated tests in the repository. */
export const testsPresent: Criterion = {
  id: 'tests_present',
  level: 1,
  title: 'Tests present',
  evaluate: (ctx) =>
    perApp(ctx, async (app) => {
      const tests = testFiles(filesMatching(ctx, app.path, /./));
      return tests.length
        ? { ok: true, evidence: `${tests.length} test file${tests.length === 1 ? '' : 's'} (${list(tests)})` }
        : { ok: false, evidence: 'no test files found' };
    }),
};
