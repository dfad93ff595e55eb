import type { Ecosystem } from '../apps.ts';
import { join } from '../repo-context.ts';
import { nearest, perApp } from './evidence.ts';
import type { Criterion } from './types.ts';

const LOCKFILES: Record<Ecosystem, string[]> = {
  node: ['package-lock.json', 'npm-shrinkwrap.json', 'pnpm-lock.yaml', 'yarn.lock', 'bun.lock', 'bun.lockb'],
  python: ['uv.lock', 'poetry.lock', 'pdm.lock', 'Pipfile.lock', 'requirements.lock'],
  go: ['go.sum'],
  rust: ['Cargo.lock'],
  java: ['gradle.lockfile'],
  ruby: ['Gemfile.lock'],
  php: ['composer.lock'],
  unknown: [],
};

/** Every requirement pinned with `==` (a pip-compile output is a lockfile by another name). */
function pinnedRequirements(text: string | undefined): boolean {
  const reqs = (text ?? '')
    .split('\n')
    .map((l) => l.replace(/#.*/, '').trim())
    .filter((l) => l && !l.startsWith('-'));
  return reqs.length > 0 && reqs.every((l) => /==/.test(l));
}

/** Dependency versions locked, so installs are the same on every machine. */
export const lockfile: Criterion = {
  id: 'lockfile',
  level: 1,
  title: 'Lockfile',
  evaluate: (ctx) =>
    perApp(ctx, async (app) => {
      if (app.ecosystem === 'unknown') return { ok: true, evidence: 'no dependency manifest, so nothing to lock' };
      const found = nearest(ctx, app.path, LOCKFILES[app.ecosystem]);
      if (found) return { ok: true, evidence: `${found} locks dependency versions` };
      if (app.ecosystem === 'python') {
        const req = join(app.path, 'requirements.txt');
        if (pinnedRequirements(await ctx.read(req))) return { ok: true, evidence: `${req} pins every requirement with ==` };
      }
      if (app.ecosystem === 'go' && app.manifest && !/^\s*require\b/m.test((await ctx.read(app.manifest)) ?? '')) {
        return { ok: true, evidence: `${app.manifest} requires no modules, so there is nothing to lock` };
      }
      const names = LOCKFILES[app.ecosystem];
      return { ok: false, evidence: `no lockfile for ${app.manifest ?? app.path} (looked for ${names.join(', ')})` };
    }),
};
