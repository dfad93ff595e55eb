import path from 'node:path/posix';
import { join, type BaseContext } from './repo-context.ts';

export type Ecosystem = 'node' | 'python' | 'go' | 'rust' | 'java' | 'ruby' | 'php' | 'unknown';

/** One application of a repository: the root, or a member of a monorepo. */
export interface App {
  /** `.` for the repository root, else the directory, e.g. `packages/api`. */
  path: string;
  ecosystem: Ecosystem;
  /** The manifest that made it an application (`packages/api/package.json`), if any. */
  manifest?: string;
  description: string;
}

/** Manifests in the order they decide an application's ecosystem. */
const MANIFESTS: readonly [string, Ecosystem][] = [
  ['package.json', 'node'],
  ['pyproject.toml', 'python'],
  ['setup.py', 'python'],
  ['go.mod', 'go'],
  ['Cargo.toml', 'rust'],
  ['pom.xml', 'java'],
  ['build.gradle', 'java'],
  ['build.gradle.kts', 'java'],
  ['Gemfile', 'ruby'],
  ['composer.json', 'php'],
];

const LABEL: Record<Ecosystem, string> = {
  node: 'Node.js package',
  python: 'Python project',
  go: 'Go module',
  rust: 'Rust crate',
  java: 'JVM project',
  ruby: 'Ruby project',
  php: 'PHP project',
  unknown: 'Repository',
};

/** Directories whose manifests belong to dependencies, fixtures or examples, not applications. */
const IGNORED_DIR = /(^|\/)(node_modules|vendor|third_party|testdata|fixtures?|examples?|\.[^/]+)(\/|$)/;
const FALLBACK_DEPTH = 2;

function manifestOf(ctx: BaseContext, dir: string): [string, Ecosystem] | undefined {
  for (const [name, eco] of MANIFESTS) if (ctx.has(join(dir, name))) return [join(dir, name), eco];
  return undefined;
}

/** `packages/*`-style patterns to a matcher of directories (`*` one segment, `**` any depth). */
function globMatcher(pattern: string): RegExp {
  const clean = pattern.replace(/^\.\//, '').replace(/\/+$/, '');
  const body = clean
    .split('/')
    .map((seg) =>
      seg === '**'
        ? '.*'
        : seg
            .replace(/[.+^${}()|[\]\\]/g, '\\$&')
            .replace(/\*/g, '[^/]*')
            .replace(/\?/g, '[^/]'),
    )
    .join('/');
  return new RegExp(`^${body}$`);
}

function stringList(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}

/** Workspace member patterns the repository declares (npm/yarn, pnpm, lerna, Cargo, go.work). */
async function memberPatterns(ctx: BaseContext): Promise<string[]> {
  const patterns: string[] = [];
  const pkg = (await ctx.json('package.json')) as { workspaces?: unknown } | undefined;
  if (pkg && typeof pkg === 'object') {
    const ws = pkg.workspaces;
    patterns.push(...stringList(ws), ...stringList((ws as { packages?: unknown } | undefined)?.packages));
  }
  const pnpm = await ctx.read('pnpm-workspace.yaml');
  if (pnpm) {
    const block = /^packages:\s*\n((?:[ \t]*(?:-.*|#.*)?\n?)*)/m.exec(pnpm)?.[1] ?? '';
    for (const m of block.matchAll(/^[ \t]*-[ \t]*['"]?([^'"\n#]+?)['"]?[ \t]*$/gm)) patterns.push(m[1]!);
  }
  const lerna = (await ctx.json('lerna.json')) as { packages?: unknown } | undefined;
  patterns.push(...stringList(lerna?.packages));
  const cargo = await ctx.read('Cargo.toml');
  const members = cargo && /\[workspace\][^[]*?members\s*=\s*\[([^\]]*)\]/s.exec(cargo)?.[1];
  if (members) for (const m of members.matchAll(/["']([^"']+)["']/g)) patterns.push(m[1]!);
  const goWork = await ctx.read('go.work');
  if (goWork) {
    const uses = [...goWork.matchAll(/^\s*use\s+\(([^)]*)\)/gm)].flatMap((m) => m[1]!.split('\n'));
    uses.push(...[...goWork.matchAll(/^\s*use\s+([^\s(]+)\s*$/gm)].map((m) => m[1]!));
    for (const u of uses) {
      const dir = u.replace(/\/\/.*$/, '').trim();
      if (dir) patterns.push(dir === '.' ? '.' : dir);
    }
  }
  return patterns;
}

function manifestDirs(ctx: BaseContext): string[] {
  const names = new Set(MANIFESTS.map(([n]) => n));
  const dirs = new Set<string>();
  for (const file of ctx.files) if (names.has(path.basename(file))) dirs.add(path.dirname(file));
  return [...dirs].filter((d) => d === '.' || !IGNORED_DIR.test(d)).sort();
}

function firstParagraph(markdown: string): string | undefined {
  const blocks = markdown
    .replace(/<!--[\s\S]*?-->/g, '')
    .split(/\n\s*\n/)
    .map((b) => b.trim())
    .filter((b) => b && !/^(#|!\[|\[!\[|<|```|=+$|-+$|\|)/.test(b));
  const text = blocks[0]?.replace(/\s+/g, ' ');
  return text ? (text.length > 300 ? `${text.slice(0, 297)}...` : text) : undefined;
}

async function describe(ctx: BaseContext, dir: string, manifest: string | undefined, eco: Ecosystem): Promise<string> {
  let name: string | undefined;
  if (manifest?.endsWith('package.json') || manifest?.endsWith('composer.json')) {
    const pkg = (await ctx.json(manifest)) as { name?: unknown; description?: unknown } | undefined;
    if (typeof pkg?.description === 'string' && pkg.description.trim()) return pkg.description.trim();
    if (typeof pkg?.name === 'string') name = pkg.name;
  } else if (manifest?.endsWith('.toml')) {
    const toml = (await ctx.read(manifest)) ?? '';
    const description = /^\s*description\s*=\s*["']([^"'\n]+)["']/m.exec(toml)?.[1]?.trim();
    if (description) return description;
    name = /^\s*name\s*=\s*["']([^"'\n]+)["']/m.exec(toml)?.[1];
  } else if (manifest?.endsWith('pom.xml')) {
    const pom = (await ctx.read(manifest)) ?? '';
    const description = /<description>\s*([^<]+?)\s*<\/description>/.exec(pom)?.[1];
    if (description) return description;
    name = /<artifactId>\s*([^<]+?)\s*<\/artifactId>/.exec(pom)?.[1];
  } else if (manifest?.endsWith('go.mod')) {
    name = /^module\s+(\S+)/m.exec((await ctx.read(manifest)) ?? '')?.[1];
  }
  const readme = ctx.files.find((f) => path.dirname(f) === dir && /^readme(\.(md|markdown|rst|txt))?$/i.test(path.basename(f)));
  const fromReadme = readme && firstParagraph((await ctx.read(readme)) ?? '');
  if (fromReadme) return fromReadme;
  const where = dir === '.' ? 'at the repository root' : `in ${dir}`;
  return `${LABEL[eco]}${name ? ` ${name}` : ''} ${where} (no description found in its manifest or README)`;
}

/**
 * The repository's applications: the members of its declared workspaces (npm/yarn/pnpm/lerna,
 * Cargo, go.work) when it is a monorepo; else the root when it has a manifest; else each
 * directory up to two levels deep that has one; else the root as one application.
 */
export async function detectApps(ctx: BaseContext): Promise<App[]> {
  const dirs = manifestDirs(ctx);
  const patterns = await memberPatterns(ctx);
  const include = patterns.filter((p) => !p.startsWith('!')).map(globMatcher);
  const exclude = patterns.filter((p) => p.startsWith('!')).map((p) => globMatcher(p.slice(1)));
  let chosen = include.length ? dirs.filter((d) => d !== '.' && include.some((r) => r.test(d)) && !exclude.some((r) => r.test(d))) : [];
  if (include.length && patterns.includes('.') && dirs.includes('.')) chosen.unshift('.');
  if (chosen.length === 0) {
    if (dirs.includes('.')) chosen = ['.'];
    else chosen = dirs.filter((d) => d.split('/').length <= FALLBACK_DEPTH);
  }
  if (chosen.length === 0) chosen = ['.'];
  const apps: App[] = [];
  for (const dir of chosen) {
    const found = manifestOf(ctx, dir);
    const eco = found?.[1] ?? 'unknown';
    apps.push({ path: dir, ecosystem: eco, manifest: found?.[0], description: await describe(ctx, dir, found?.[0], eco) });
  }
  return apps;
}
