import { fileIn, filesMatching, nearest, packageJson, perApp, sectionIn, taskTarget } from './evidence.ts';
import { testFiles } from './tests-present.ts';
import type { Criterion } from './types.ts';

/** What `npm init` writes: a test script that only fails. */
const NPM_PLACEHOLDER = /no test specified/;

/**
 * One command runs each application's tests: a test script, a `test` task, or the runner the
 * toolchain brings, with tests for it to find. The evaluator does not run the command: a
 * repository's code never runs on the control plane, and scores must not depend on where the
 * evaluation happened.
 */
export const testsRunnable: Criterion = {
  id: 'tests_runnable',
  level: 4,
  title: 'Tests runnable',
  evaluate: (ctx) =>
    perApp(ctx, async (app) => {
      const hasTests = testFiles(filesMatching(ctx, app.path, /./)).length > 0;
      const task = await taskTarget(ctx, app.path, 'test');
      if (app.ecosystem === 'node') {
        const script = (await packageJson(ctx, app.path))?.scripts?.test;
        if (script && !NPM_PLACEHOLDER.test(script)) return { ok: true, evidence: `\`test\` script in ${app.manifest}: ${script}` };
        if (script) return { ok: false, evidence: `the \`test\` script in ${app.manifest} is npm's placeholder that only fails` };
      }
      if (task) return { ok: true, evidence: task };
      const none = { ok: false, evidence: hasTests ? 'tests exist but no command runs them' : 'no tests and no test command' };
      if (!hasTests) return none;
      switch (app.ecosystem) {
        case 'python': {
          const config = nearest(ctx, app.path, ['pytest.ini', 'tox.ini', 'noxfile.py', 'conftest.py']);
          if (config) return { ok: true, evidence: `pytest/tox configured in ${config}` };
          const section = await sectionIn(ctx, app.path, ['pyproject.toml', 'setup.cfg'], ['tool.pytest.ini_options', 'tool:pytest']);
          if (section) return { ok: true, evidence: `pytest configured in ${section}` };
          return none;
        }
        case 'go':
          return { ok: true, evidence: '`go test ./...` runs the _test.go files' };
        case 'rust':
          return { ok: true, evidence: '`cargo test` runs the tests' };
        case 'java':
          return { ok: true, evidence: `${app.manifest} runs the tests (${app.manifest!.endsWith('pom.xml') ? 'mvn test' : 'gradle test'})` };
        case 'ruby': {
          const file = fileIn(ctx, app.path, ['.rspec', 'Rakefile']);
          return file ? { ok: true, evidence: `tests run through ${file}` } : none;
        }
        case 'php': {
          const file = nearest(ctx, app.path, ['phpunit.xml', 'phpunit.xml.dist']);
          return file ? { ok: true, evidence: `phpunit configured in ${file}` } : none;
        }
        default:
          return none;
      }
    }),
};
