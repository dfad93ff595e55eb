import path from 'node:path/posix';
import { filesUnder, join, selfAndAncestors, type RepoContext } from '../repo-context.ts';
import type { App, AppVerdict, Score } from './types.ts';

/** A yes/no criterion. */
export function binary(ok: boolean, rationale: string): Score {
  return { numerator: ok ? 1 : 0, denominator: 1, rationale };
}

/** A criterion checked per application: one point per application that meets it. */
export async function perApp(ctx: RepoContext, check: (app: App) => Promise<AppVerdict>): Promise<Score> {
  const verdicts: [App, AppVerdict][] = [];
  for (const app of ctx.apps) verdicts.push([app, await check(app)]);
  const passed = verdicts.filter(([, v]) => v.ok).length;
  const rationale = verdicts.length === 1 ? verdicts[0]![1].evidence : verdicts.map(([app, v]) => `${app.path}: ${v.evidence}`).join('; ');
  return { numerator: passed, denominator: verdicts.length, rationale };
}

/** The first of `names` (file names, or patterns matched against the base name) present in `dir`. */
export function fileIn(ctx: RepoContext, dir: string, names: readonly (string | RegExp)[]): string | undefined {
  for (const name of names) {
    if (typeof name === 'string') {
      if (ctx.has(join(dir, name))) return join(dir, name);
      continue;
    }
    const hit = ctx.files.find((f) => path.dirname(f) === dir && name.test(path.basename(f)));
    if (hit) return hit;
  }
  return undefined;
}

/** The nearest of `names` in `dir` or a directory above it (monorepos keep shared config at the root). */
export function nearest(ctx: RepoContext, dir: string, names: readonly (string | RegExp)[]): string | undefined {
  for (const d of selfAndAncestors(dir)) {
    const hit = fileIn(ctx, d, names);
    if (hit) return hit;
  }
  return undefined;
}

/** Files anywhere in the application's directory whose path matches. */
export function filesMatching(ctx: RepoContext, dir: string, pattern: RegExp): string[] {
  return filesUnder(ctx.files, dir).filter((f) => pattern.test(f));
}

export interface PackageJson {
  name?: string;
  description?: string;
  scripts?: Record<string, string>;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  engines?: Record<string, string>;
  [key: string]: unknown;
}

export async function packageJson(ctx: RepoContext, dir: string): Promise<PackageJson | undefined> {
  const value = await ctx.json(join(dir, 'package.json'));
  return value && typeof value === 'object' && !Array.isArray(value) ? (value as PackageJson) : undefined;
}

/** A package.json key set in the application's package.json or the root one. */
export async function packageKey(ctx: RepoContext, dir: string, key: string): Promise<string | undefined> {
  for (const d of dir === '.' ? ['.'] : [dir, '.']) {
    const pkg = await packageJson(ctx, d);
    if (pkg && pkg[key] !== undefined) return join(d, 'package.json');
  }
  return undefined;
}

/** Whether a TOML or INI text has a `[section]` header (or a sub-table of it). */
function hasSection(text: string | undefined, section: string): boolean {
  if (!text) return false;
  const escaped = section.replace(/[.[\]]/g, '\\$&');
  return new RegExp(`^\\s*\\[${escaped}(\\.[^\\]]+)?\\]`, 'm').test(text);
}

/** The first of `sections` found in the nearest of `files` (pyproject.toml, setup.cfg, ...). */
export async function sectionIn(ctx: RepoContext, dir: string, files: readonly string[], sections: readonly string[]): Promise<string | undefined> {
  for (const d of selfAndAncestors(dir)) {
    for (const f of files) {
      const text = await ctx.read(join(d, f));
      const hit = sections.find((s) => hasSection(text, s));
      if (hit) return `[${hit}] in ${join(d, f)}`;
    }
  }
  return undefined;
}

/** A Makefile, justfile or Taskfile target named `target`, in the application or the root. */
export async function taskTarget(ctx: RepoContext, dir: string, target: string): Promise<string | undefined> {
  for (const d of dir === '.' ? ['.'] : [dir, '.']) {
    for (const file of ['Makefile', 'makefile', 'GNUmakefile', 'justfile', 'Justfile']) {
      const text = await ctx.read(join(d, file));
      if (text && new RegExp(`^(?:[\\w.\\- \\t]*[ \\t])?${target}(?:[ \\t][^:\\n=]*)?:(?!=)`, 'm').test(text))
        return `\`${target}\` target in ${join(d, file)}`;
    }
    for (const file of ['Taskfile.yml', 'Taskfile.yaml']) {
      const text = await ctx.read(join(d, file));
      if (text && new RegExp(`^\\s+${target}:\\s*$`, 'm').test(text)) return `\`${target}\` task in ${join(d, file)}`;
    }
  }
  return undefined;
}

/** "a, b and 3 more" for rationales. */
export function list(items: readonly string[], max = 3): string {
  if (items.length <= max) return items.join(', ');
  return `${items.slice(0, max).join(', ')} and ${items.length - max} more`;
}
