import { builtinModules } from 'node:module';
import path from 'node:path/posix';
import type { ParsedLanguage } from './languages.ts';
import type { Manifest } from './manifests.ts';

/** Where an import leads: a file of the repository, or a named external package. */
export type Resolved = { file: string } | { external: string } | null;

const TS_EXTENSIONS = ['.ts', '.tsx', '.mts', '.cts', '.js', '.jsx', '.mjs', '.cjs'];
const NODE_BUILTINS = new Set(builtinModules);
const RUST_BUILTIN_CRATES = new Set(['std', 'core', 'alloc']);

const dirOf = (file: string) => (path.dirname(file) === '.' ? '' : path.dirname(file));
const join = (...parts: string[]) => path.normalize(path.join(...parts)).replace(/^\.\/?$/, '');

/**
 * Resolves import specifiers to files the way each language's toolchain would, from the file list
 * and manifests alone (nothing is built or run): relative and workspace imports for TS/JS, module
 * paths under package roots for Python, the go.mod module path for Go, crate/self/super paths for
 * Rust, package paths for Java.
 */
export function createImportResolver(files: Iterable<string>, manifests: Manifest[]) {
  const fileSet = new Set(files);
  const javaBySuffix = new Map<string, string>();
  for (const f of fileSet)
    if (f.endsWith('.java')) {
      const parts = f.replace(/\.java$/, '').split('/');
      for (let i = 0; i < parts.length; i++) javaBySuffix.set(parts.slice(i).join('.'), f);
    }
  const npmPackages = new Map<string, Manifest>();
  for (const m of manifests) if (m.kind === 'npm' && m.name) npmPackages.set(m.name, m);
  const goModules = manifests.filter((m) => m.kind === 'go' && m.name && m.file.endsWith('go.mod')).sort((a, b) => b.name!.length - a.name!.length);
  const pythonRoots = [...new Set(['', ...manifests.filter((m) => m.kind === 'python').flatMap((m) => [m.dir, join(m.dir, 'src')])])];
  const cargoDirs = manifests
    .filter((m) => m.kind === 'cargo')
    .map((m) => m.dir)
    .sort((a, b) => b.length - a.length);
  const dirFiles = new Map<string, string[]>();
  for (const f of fileSet) {
    const d = dirOf(f);
    if (!dirFiles.has(d)) dirFiles.set(d, []);
    dirFiles.get(d)!.push(f);
  }

  const firstFile = (candidates: string[]) => candidates.find((c) => fileSet.has(c));

  function tsFile(base: string): string | undefined {
    const stripped = base.replace(/\.(m|c)?js$/, '');
    return firstFile([base, ...TS_EXTENSIONS.map((e) => stripped + e), ...TS_EXTENSIONS.map((e) => join(base, `index${e}`))]);
  }

  function typescript(from: string, spec: string): Resolved {
    if (spec.startsWith('.') || spec.startsWith('/')) {
      const file = tsFile(join(dirOf(from), spec));
      return file ? { file } : null;
    }
    if (spec.startsWith('node:') || NODE_BUILTINS.has(spec.split('/')[0]!)) return { external: 'node' };
    const parts = spec.split('/');
    const name = spec.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!;
    const sub = parts.slice(spec.startsWith('@') ? 2 : 1).join('/');
    const pkg = npmPackages.get(name);
    if (!pkg) return { external: name };
    const target = sub
      ? (tsFile(join(pkg.dir, sub)) ?? tsFile(join(pkg.dir, 'src', sub)))
      : (pkg.entryPoints.map((e) => tsFile(e) ?? tsFile(e.replace(/^(.*?)\/?(dist|build|lib)\//, '$1/src/'))).find(Boolean) ??
        tsFile(join(pkg.dir, 'src/index')) ??
        tsFile(join(pkg.dir, 'index')));
    return target ? { file: target } : { external: name };
  }

  function python(from: string, spec: string): Resolved {
    const dots = /^\.*/.exec(spec)![0].length;
    const rest = spec.slice(dots).split('.').filter(Boolean);
    const bases = dots ? [path.normalize(path.join(dirOf(from), ...Array(dots - 1).fill('..'))).replace(/^\.$/, '')] : pythonRoots;
    for (const base of bases) {
      for (let n = rest.length; n >= (dots ? 0 : 1); n--) {
        const p = join(base, ...rest.slice(0, n));
        const file = firstFile(n ? [`${p}.py`, join(p, '__init__.py')] : [join(p, '__init__.py')]);
        if (file) return { file };
      }
    }
    return dots ? null : { external: rest[0]! };
  }

  function go(spec: string): Resolved {
    const mod = goModules.find((m) => spec === m.name || spec.startsWith(`${m.name}/`));
    if (!mod)
      return {
        external: spec
          .split('/')
          .slice(0, spec.includes('.') ? 3 : 1)
          .join('/'),
      };
    const dir = join(mod.dir, spec.slice(mod.name!.length + 1));
    const file = dirFiles.get(dir)?.find((f) => f.endsWith('.go'));
    return file ? { file } : null;
  }

  function rust(from: string, spec: string): Resolved {
    const segments = spec.replace(/\{.*$/, '').split('::').filter(Boolean);
    const head = segments[0];
    if (!head) return null;
    let base: string;
    if (head === 'crate') {
      const crate = cargoDirs.find((d) => from.startsWith(d ? `${d}/` : '')) ?? '';
      base = join(crate, 'src');
    } else if (head === 'self' || head === 'super') {
      const own = /(^|\/)(mod|lib|main)\.rs$/.test(from) ? dirOf(from) : join(dirOf(from), path.basename(from, '.rs'));
      base = head === 'super' ? dirOf(own) : own;
    } else return RUST_BUILTIN_CRATES.has(head) ? { external: 'std' } : { external: head };
    const rest = segments.slice(1);
    for (let n = rest.length; n >= 1; n--) {
      const p = join(base, ...rest.slice(0, n));
      const file = firstFile([`${p}.rs`, join(p, 'mod.rs')]);
      if (file) return { file };
    }
    return null;
  }

  function java(spec: string): Resolved {
    const clean = spec.replace(/\.\*$/, '');
    const file = javaBySuffix.get(clean) ?? javaBySuffix.get(clean.split('.').slice(0, -1).join('.'));
    if (file) return { file };
    if (spec.endsWith('.*')) {
      const dir = [...dirFiles.keys()].find((d) => d.endsWith(clean.replace(/\./g, '/')));
      const any = dir ? dirFiles.get(dir)!.find((f) => f.endsWith('.java')) : undefined;
      if (any) return { file: any };
    }
    return { external: spec.split('.').slice(0, 2).join('.') };
  }

  return (language: ParsedLanguage, from: string, spec: string): Resolved => {
    switch (language) {
      case 'typescript':
      case 'tsx':
      case 'javascript':
        return typescript(from, spec);
      case 'python':
        return python(from, spec);
      case 'go':
        return go(spec);
      case 'rust':
        return rust(from, spec);
      case 'java':
        return java(spec);
    }
  };
}
