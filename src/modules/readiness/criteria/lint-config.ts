import type { Ecosystem } from '../apps.ts';
import { nearest, packageKey, perApp, sectionIn } from './evidence.ts';
import type { Criterion } from './types.ts';

const ESLINT = /^(eslint\.config\.[cm]?[jt]s|\.eslintrc(\.(js|cjs|json|ya?ml))?)$/;
const BIOME = ['biome.json', 'biome.jsonc'];
const CONFIGS: Record<Ecosystem, (string | RegExp)[]> = {
  node: [ESLINT, ...BIOME, '.oxlintrc.json', 'deno.json'],
  python: ['ruff.toml', '.ruff.toml', '.flake8', '.pylintrc', 'pylintrc'],
  go: ['.golangci.yml', '.golangci.yaml', '.golangci.toml', '.golangci.json', 'staticcheck.conf'],
  rust: ['clippy.toml', '.clippy.toml'],
  java: ['checkstyle.xml', 'config/checkstyle/checkstyle.xml', 'detekt.yml', '.editorconfig-checker.json'],
  ruby: ['.rubocop.yml', '.standard.yml'],
  php: ['phpcs.xml', 'phpcs.xml.dist', '.php-cs-fixer.php', '.php-cs-fixer.dist.php'],
  unknown: [ESLINT, ...BIOME, 'ruff.toml', '.golangci.yml', '.rubocop.yml', '.shellcheckrc'],
};
const SECTIONS: Partial<Record<Ecosystem, [string[], string[]]>> = {
  python: [
    ['pyproject.toml', 'setup.cfg', 'tox.ini'],
    ['tool.ruff', 'tool.pylint', 'tool.flake8', 'flake8'],
  ],
  rust: [['Cargo.toml'], ['lints', 'workspace.lints']],
};

/** A linter configured for each application (in it, or shared from a directory above). */
export const lintConfig: Criterion = {
  id: 'lint_config',
  level: 3,
  title: 'Lint configuration',
  evaluate: (ctx) =>
    perApp(ctx, async (app) => {
      const file = nearest(ctx, app.path, CONFIGS[app.ecosystem]);
      if (file) return { ok: true, evidence: `linter configured in ${file}` };
      const sections = SECTIONS[app.ecosystem];
      const section = sections && (await sectionIn(ctx, app.path, sections[0], sections[1]));
      if (section) return { ok: true, evidence: `linter configured in ${section}` };
      if (app.ecosystem === 'node') {
        const key = await packageKey(ctx, app.path, 'eslintConfig');
        if (key) return { ok: true, evidence: `eslintConfig in ${key}` };
      }
      return { ok: false, evidence: 'no linter configuration found' };
    }),
};
