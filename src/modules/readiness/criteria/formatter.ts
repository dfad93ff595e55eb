import type { Ecosystem } from '../apps.ts';
import { nearest, packageKey, perApp, sectionIn } from './evidence.ts';
import type { Criterion } from './types.ts';

const PRETTIER = /^(\.prettierrc(\.(json|json5|ya?ml|toml|[cm]?js))?|prettier\.config\.[cm]?[jt]s)$/;
const SHARED = [PRETTIER, 'biome.json', 'biome.jsonc', 'dprint.json', '.dprint.json', '.clang-format'];
const CONFIGS: Record<Ecosystem, (string | RegExp)[]> = {
  node: [...SHARED, 'deno.json'],
  python: ['ruff.toml', '.ruff.toml', ...SHARED],
  go: [],
  rust: [],
  java: ['.clang-format', 'dprint.json', 'spotless.gradle'],
  ruby: ['.rubocop.yml', '.standard.yml', ...SHARED],
  php: ['.php-cs-fixer.php', '.php-cs-fixer.dist.php', ...SHARED],
  unknown: SHARED,
};
/** Toolchains whose formatter ships with the compiler, so every project has one. */
const BUILT_IN: Partial<Record<Ecosystem, string>> = { go: 'gofmt', rust: 'rustfmt (cargo fmt)' };

/** An automatic code formatter, so agents' edits match the codebase's style. */
export const formatter: Criterion = {
  id: 'formatter',
  level: 3,
  title: 'Formatter',
  evaluate: (ctx) =>
    perApp(ctx, async (app) => {
      const builtIn = BUILT_IN[app.ecosystem];
      if (builtIn) return { ok: true, evidence: `${builtIn} ships with the toolchain of ${app.manifest}` };
      const file = nearest(ctx, app.path, CONFIGS[app.ecosystem]);
      if (file) return { ok: true, evidence: `formatter configured in ${file}` };
      if (app.ecosystem === 'python') {
        const section = await sectionIn(ctx, app.path, ['pyproject.toml'], ['tool.black', 'tool.ruff.format', 'tool.yapf', 'tool.isort']);
        if (section) return { ok: true, evidence: `formatter configured in ${section}` };
      }
      if (app.ecosystem === 'java' && app.manifest && /spotless|ktlint|google-java-format/.test((await ctx.read(app.manifest)) ?? '')) {
        return { ok: true, evidence: `formatter plugin in ${app.manifest}` };
      }
      if (app.ecosystem === 'node') {
        const key = await packageKey(ctx, app.path, 'prettier');
        if (key) return { ok: true, evidence: `prettier configured in ${key}` };
      }
      return { ok: false, evidence: 'no formatter configuration found' };
    }),
};
