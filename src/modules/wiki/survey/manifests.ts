import path from 'node:path/posix';
import { XMLParser } from 'fast-xml-parser';
import { parse as parseToml } from 'smol-toml';
import { parse as parseYaml } from 'yaml';

type ManifestKind = 'npm' | 'go' | 'python' | 'cargo' | 'maven' | 'gradle';

/** A package manifest: what the package is called, says it is, depends on and runs. */
export interface Manifest {
  file: string;
  /** Directory of the manifest, '' for the repository root. */
  dir: string;
  kind: ManifestKind;
  name: string | null;
  description: string | null;
  dependencies: { name: string; version: string; dev: boolean }[];
  /** Named commands (npm scripts, console scripts, Makefile-like targets of the manifest itself). */
  scripts: Record<string, string>;
  /** Workspace member patterns this manifest declares (npm/yarn/pnpm, Cargo, Maven, Gradle, go.work). */
  workspaces: string[];
  /** Files the manifest names as entry points. */
  entryPoints: string[];
}

const MANIFEST_FILES: Record<string, ManifestKind> = {
  'package.json': 'npm',
  'go.mod': 'go',
  'pyproject.toml': 'python',
  'setup.py': 'python',
  'setup.cfg': 'python',
  'requirements.txt': 'python',
  'Cargo.toml': 'cargo',
  'pom.xml': 'maven',
  'build.gradle': 'gradle',
  'build.gradle.kts': 'gradle',
};

export function isManifestFile(file: string): boolean {
  return (
    path.basename(file) in MANIFEST_FILES ||
    path.basename(file) === 'pnpm-workspace.yaml' ||
    path.basename(file) === 'go.work' ||
    /^settings\.gradle(\.kts)?$/.test(path.basename(file))
  );
}

const obj = (v: unknown): Record<string, unknown> => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {});
const str = (v: unknown): string | null => (typeof v === 'string' && v.trim() ? v.trim() : null);
const deps = (v: unknown, dev: boolean) =>
  Object.entries(obj(v)).map(([name, version]) => ({ name, version: typeof version === 'string' ? version : (str(obj(version).version) ?? '*'), dev }));

function npm(text: string, dir: string): Partial<Manifest> {
  const pkg = obj(JSON.parse(text));
  const ws = Array.isArray(pkg.workspaces) ? pkg.workspaces : obj(pkg.workspaces).packages;
  const entries = new Set<string>();
  for (const field of [pkg.main, pkg.module]) if (str(field)) entries.add(str(field)!);
  if (typeof pkg.bin === 'string') entries.add(pkg.bin);
  for (const v of Object.values(obj(pkg.bin))) if (str(v)) entries.add(str(v)!);
  const dot = obj(pkg.exports)['.'] ?? (typeof pkg.exports === 'string' ? pkg.exports : undefined);
  if (typeof dot === 'string') entries.add(dot);
  return {
    name: str(pkg.name),
    description: str(pkg.description),
    dependencies: [...deps(pkg.dependencies, false), ...deps(pkg.peerDependencies, false), ...deps(pkg.devDependencies, true)],
    scripts: Object.fromEntries(Object.entries(obj(pkg.scripts)).filter(([, v]) => typeof v === 'string')) as Record<string, string>,
    workspaces: Array.isArray(ws) ? ws.filter((w): w is string => typeof w === 'string') : [],
    entryPoints: [...entries].map((e) => path.normalize(path.join(dir, e))),
  };
}

function goMod(text: string): Partial<Manifest> {
  const name = /^module\s+(\S+)/m.exec(text)?.[1] ?? null;
  const dependencies: Manifest['dependencies'] = [];
  const block = /require\s*\(([\s\S]*?)\)/g;
  for (const m of text.matchAll(block)) {
    for (const line of m[1]!.split('\n')) {
      const [dep, version] = line.trim().split(/\s+/);
      if (dep && version && !dep.startsWith('//')) dependencies.push({ name: dep, version, dev: /\/\/ indirect/.test(line) });
    }
  }
  for (const m of text.matchAll(/^require\s+(\S+)\s+(\S+)/gm)) dependencies.push({ name: m[1]!, version: m[2]!, dev: false });
  return { name, dependencies };
}

function pyproject(text: string): Partial<Manifest> {
  const doc = parseToml(text) as Record<string, unknown>;
  const project = obj(doc.project);
  const poetry = obj(obj(doc.tool).poetry);
  const pep508 = (spec: string) => {
    const name = /^[A-Za-z0-9._-]+/.exec(spec)?.[0] ?? spec;
    return { name, version: spec.slice(name.length).trim() || '*', dev: false };
  };
  const listed = Array.isArray(project.dependencies) ? project.dependencies.filter((d): d is string => typeof d === 'string').map(pep508) : [];
  const optional = Object.values(obj(project['optional-dependencies'])).flatMap((l) =>
    Array.isArray(l) ? l.filter((d): d is string => typeof d === 'string').map((d) => ({ ...pep508(d), dev: true })) : [],
  );
  return {
    name: str(project.name) ?? str(poetry.name),
    description: str(project.description) ?? str(poetry.description),
    dependencies: [...listed, ...optional, ...deps(poetry.dependencies, false).filter((d) => d.name !== 'python')],
    scripts: Object.fromEntries(Object.entries({ ...obj(project.scripts), ...obj(poetry.scripts) }).filter(([, v]) => typeof v === 'string')) as Record<
      string,
      string
    >,
  };
}

function requirements(text: string): Partial<Manifest> {
  const dependencies = text
    .split('\n')
    .map((l) => l.replace(/#.*/, '').trim())
    .filter((l) => l && !l.startsWith('-'))
    .map((l) => {
      const name = /^[A-Za-z0-9._-]+/.exec(l)?.[0] ?? l;
      return { name, version: l.slice(name.length).trim() || '*', dev: false };
    });
  return { dependencies };
}

function cargo(text: string): Partial<Manifest> {
  const doc = parseToml(text) as Record<string, unknown>;
  const pkg = obj(doc.package);
  const members = obj(doc.workspace).members;
  return {
    name: str(pkg.name),
    description: str(pkg.description),
    dependencies: [...deps(doc.dependencies, false), ...deps(doc['dev-dependencies'], true)],
    workspaces: Array.isArray(members) ? members.filter((m): m is string => typeof m === 'string') : [],
  };
}

function maven(text: string): Partial<Manifest> {
  const project = obj(new XMLParser({ ignoreAttributes: true }).parse(text).project);
  const list = (v: unknown) => (Array.isArray(v) ? v : v === undefined ? [] : [v]);
  const dependencies = list(obj(project.dependencies).dependency).map((d) => {
    const dep = obj(d);
    return { name: `${dep.groupId}:${dep.artifactId}`, version: String(dep.version ?? '*'), dev: dep.scope === 'test' };
  });
  return {
    name: str(project.artifactId),
    description: str(project.description) ?? str(project.name),
    dependencies,
    workspaces: list(obj(project.modules).module).filter((m): m is string => typeof m === 'string'),
  };
}

function gradle(text: string): Partial<Manifest> {
  // Gradle build files are programs; only their declarative dependency lines are read.
  const dependencies = [
    ...text.matchAll(/^\s*(implementation|api|compileOnly|runtimeOnly|testImplementation)\s*\(?\s*["']([^"':]+:[^"':]+)(?::([^"']+))?["']/gm),
  ].map((m) => ({
    name: m[2]!,
    version: m[3] ?? '*',
    dev: m[1]!.startsWith('test'),
  }));
  return { dependencies };
}

function workspaceFile(file: string, text: string): string[] {
  const base = path.basename(file);
  if (base === 'pnpm-workspace.yaml') {
    const pkgs = obj(parseYaml(text)).packages;
    return Array.isArray(pkgs) ? pkgs.filter((p): p is string => typeof p === 'string') : [];
  }
  if (base === 'go.work') return [...text.matchAll(/^\s*(?:use\s+)?(\.{1,2}\/\S*|\.)\s*$/gm)].map((m) => m[1]!);
  return [...text.matchAll(/include\s*\(?\s*([^\n)]*)/g)].flatMap((m) => [...m[1]!.matchAll(/["']:?([^"']+)["']/g)].map((x) => x[1]!.replace(/:/g, '/')));
}

/** Reads one manifest; a manifest that does not parse yields only its file, kind and the parse error. */
export function readManifest(file: string, text: string): Manifest & { error?: string } {
  const dir = path.dirname(file) === '.' ? '' : path.dirname(file);
  const base = path.basename(file);
  const kind = MANIFEST_FILES[base] ?? (base === 'go.work' ? 'go' : base === 'pnpm-workspace.yaml' ? 'npm' : 'gradle');
  const empty: Manifest = { file, dir, kind, name: null, description: null, dependencies: [], scripts: {}, workspaces: [], entryPoints: [] };
  try {
    const parsed =
      base === 'package.json'
        ? npm(text, dir)
        : base === 'go.mod'
          ? goMod(text)
          : base === 'pyproject.toml'
            ? pyproject(text)
            : base === 'requirements.txt'
              ? requirements(text)
              : base === 'Cargo.toml'
                ? cargo(text)
                : base === 'pom.xml'
                  ? maven(text)
                  : base.startsWith('build.gradle')
                    ? gradle(text)
                    : base === 'pnpm-workspace.yaml' || base === 'go.work' || base.startsWith('settings.gradle')
                      ? { workspaces: workspaceFile(file, text) }
                      : {};
    return { ...empty, ...parsed };
  } catch (err) {
    return { ...empty, error: (err as Error).message };
  }
}

/** Directories (of `dirs`) matched by workspace patterns relative to `base` (`*`, `**`, plain paths). */
export function matchWorkspaces(base: string, patterns: string[], dirs: Iterable<string>): string[] {
  const regexes = patterns
    .filter((p) => !p.startsWith('!'))
    .map((p) => {
      const full = path.normalize(path.join(base, p)).replace(/\/$/, '');
      const source = full
        .split('/')
        .map((seg) => (seg === '**' ? '.*' : seg.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*')))
        .join('/');
      return new RegExp(`^${source}$`);
    });
  return [...dirs].filter((d) => regexes.some((r) => r.test(d))).sort();
}
