import type { Ecosystem } from '../apps.ts';
import { nearest, perApp, sectionIn } from './evidence.ts';
import type { Criterion } from './types.ts';

/** Languages whose compiler checks types on every build. */
const COMPILED: Partial<Record<Ecosystem, string>> = { go: 'Go', rust: 'Rust', java: 'the JVM language' };

/** Static type checking for each application. */
export const typeCheck: Criterion = {
  id: 'type_check',
  level: 3,
  title: 'Type checking',
  evaluate: (ctx) =>
    perApp(ctx, async (app) => {
      const compiled = COMPILED[app.ecosystem];
      if (compiled) return { ok: true, evidence: `${compiled} compiler checks types (${app.manifest})` };
      if (app.ecosystem === 'node' || app.ecosystem === 'unknown') {
        const tsconfig = nearest(ctx, app.path, [/^tsconfig(\.[\w-]+)?\.json$/]);
        if (tsconfig) return { ok: true, evidence: `TypeScript configured in ${tsconfig}` };
        const jsconfig = nearest(ctx, app.path, ['jsconfig.json']);
        if (jsconfig && /"checkJs"\s*:\s*true/.test((await ctx.read(jsconfig)) ?? '')) {
          return { ok: true, evidence: `checkJs enabled in ${jsconfig}` };
        }
      }
      if (app.ecosystem === 'python') {
        const file = nearest(ctx, app.path, ['mypy.ini', '.mypy.ini', 'pyrightconfig.json']);
        if (file) return { ok: true, evidence: `type checker configured in ${file}` };
        const section = await sectionIn(ctx, app.path, ['pyproject.toml', 'setup.cfg'], ['tool.mypy', 'tool.pyright', 'tool.basedpyright', 'mypy']);
        if (section) return { ok: true, evidence: `type checker configured in ${section}` };
      }
      if (app.ecosystem === 'ruby') {
        const file = nearest(ctx, app.path, ['sorbet/config', 'Steepfile']);
        if (file) return { ok: true, evidence: `type checker configured in ${file}` };
      }
      if (app.ecosystem === 'php') {
        const file = nearest(ctx, app.path, ['phpstan.neon', 'phpstan.neon.dist', 'psalm.xml', 'psalm.xml.dist']);
        if (file) return { ok: true, evidence: `static analysis configured in ${file}` };
      }
      return { ok: false, evidence: 'no type checker configured' };
    }),
};
