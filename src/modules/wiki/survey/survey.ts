import path from 'node:path/posix';
import { buildKindOf, isReadme, readBuildConfig, type BuildConfig } from './ci.ts';
import { extractSyntax } from './extract.ts';
import type { GitRepo, TreeEntry } from './git-repo.ts';
import { readHistory, type History } from './history.ts';
import { countLines, isIgnoredPath, isSourceFile, languageOf } from './languages.ts';
import { isManifestFile, matchWorkspaces, readManifest, type Manifest } from './manifests.ts';
import { createImportResolver } from './resolve-imports.ts';
import type { SymbolInfo } from './syntax.ts';

/** Size bounds of a run: a repository over either fails the run, naming it. */
export interface SurveyBounds {
  maxFiles: number;
  maxBytes: number;
}

export class BoundExceeded extends Error {}

interface SourceFile {
  path: string;
  sha: string;
  language: string;
  lines: number;
  module: string;
  doc: string | null;
  symbols: SymbolInfo[];
  /** Why the file was counted but not parsed (too large), if it was not. */
  unparsed?: string;
}

/** A directory that directly holds source files: the unit pages are written about. */
export interface ModuleInfo {
  dir: string;
  files: SourceFile[];
  lines: number;
  languages: Record<string, number>;
  /** The workspace package it belongs to (its manifest's directory), if any. */
  packageDir: string | null;
  /** README of the directory, else the doc comment of its main file. */
  doc: string | null;
  imports: Map<string, number>;
  importedBy: Map<string, number>;
  externals: Map<string, number>;
}

export interface Survey {
  headCommit: string;
  committedAt: string;
  totals: { files: number; bytes: number; sourceFiles: number; lines: number; symbols: number };
  languages: { name: string; files: number; lines: number }[];
  manifests: Manifest[];
  /** Workspace packages: manifests named by a workspace declaration (or every nested manifest of a monorepo). */
  packages: Manifest[];
  entryPoints: string[];
  readmes: Map<string, string>;
  files: SourceFile[];
  modules: ModuleInfo[];
  edges: { from: string; to: string; count: number }[];
  /** The same imports between files (a file importing itself left out), for graphs of repositories with few directories. */
  fileEdges: { from: string; to: string; count: number }[];
  history: History;
  builds: BuildConfig[];
  envVars: { name: string; files: string[] }[];
  /** Data models: Prisma models and SQL tables, with their files. */
  dataModels: { name: string; kind: string; file: string; line: number }[];
  /** Every blob SHA by path, for citations and incremental runs. */
  blobs: Map<string, string>;
}

const MAX_PARSE_BYTES = 1024 * 1024;
const ENTRY_NAMES = /(^|\/)(main\.(go|rs|py|ts|js)|__main__\.py|server\.(ts|js)|app\.(ts|js|py)|cli\.(ts|js|py)|manage\.py|index\.(ts|js))$/;

export function checkBounds(tree: TreeEntry[], bounds: SurveyBounds): number {
  const bytes = tree.reduce((sum, e) => sum + e.size, 0);
  if (tree.length > bounds.maxFiles) {
    throw new BoundExceeded(
      `the repository has ${tree.length} files at HEAD, more than AGENTPLANE_WIKI_MAX_FILES (${bounds.maxFiles}); raise the bound or document a smaller repository`,
    );
  }
  if (bytes > bounds.maxBytes) {
    throw new BoundExceeded(
      `the repository holds ${bytes} bytes at HEAD, more than AGENTPLANE_WIKI_MAX_BYTES (${bounds.maxBytes}); raise the bound or document a smaller repository`,
    );
  }
  return bytes;
}

function firstParagraph(markdown: string): string | null {
  const body = markdown
    .replace(/<!--[\s\S]*?-->/g, '')
    .split(/\n\s*\n/)
    .map((p) => p.trim())
    .find((p) => p && !p.startsWith('#') && !p.startsWith('![') && !p.startsWith('[![') && !p.startsWith('```') && !p.startsWith('|') && !p.startsWith('<'));
  return body ? body.replace(/\s*\n\s*/g, ' ') : null;
}

/**
 * Everything the wiki is written from, read from the bare clone's objects: files and languages,
 * manifests and workspaces, entry points, each file's syntax (tree-sitter), the import graph between
 * modules, CI and build configuration, environment variables, data models and git history.
 */
export async function surveyRepository(repo: GitRepo, bounds: SurveyBounds, signal?: AbortSignal): Promise<Survey> {
  const tree = await repo.tree(signal);
  const bytes = checkBounds(tree, bounds);
  const head = await repo.head(signal);
  const wanted = tree.filter(
    (e) =>
      (isSourceFile(e.path) && e.size <= MAX_PARSE_BYTES) ||
      (!isIgnoredPath(e.path) && (isManifestFile(e.path) || isReadme(e.path) || buildKindOf(e.path) !== undefined)),
  );
  const blobs = await repo.readBlobs(
    wanted.map((e) => e.sha),
    signal,
  );
  const text = (e: TreeEntry) => blobs.get(e.sha)?.toString('utf8') ?? '';

  const manifests = wanted.filter((e) => isManifestFile(e.path)).map((e) => readManifest(e.path, text(e)));
  const readmes = new Map<string, string>();
  for (const e of wanted)
    if (isReadme(e.path)) {
      const dir = path.dirname(e.path) === '.' ? '' : path.dirname(e.path);
      if (!readmes.has(dir) || e.path.toLowerCase().endsWith('.md')) readmes.set(dir, text(e));
    }
  const builds = wanted.flatMap((e) => {
    const kind = buildKindOf(e.path);
    return kind ? [readBuildConfig(e.path, kind, text(e))] : [];
  });

  const files: SourceFile[] = [];
  const envVars = new Map<string, Set<string>>();
  const imports: { from: string; language: import('./languages.ts').ParsedLanguage; specifier: string }[] = [];
  for (const e of tree) {
    signal?.throwIfAborted();
    if (!isSourceFile(e.path)) continue;
    const lang = languageOf(e.path)!;
    const module = path.dirname(e.path) === '.' ? '' : path.dirname(e.path);
    const body = blobs.get(e.sha);
    if (!body) {
      files.push({ path: e.path, sha: e.sha, language: lang.name, lines: 0, module, doc: null, symbols: [], unparsed: `larger than ${MAX_PARSE_BYTES} bytes` });
      continue;
    }
    const source = body.toString('utf8');
    const file: SourceFile = { path: e.path, sha: e.sha, language: lang.name, lines: countLines(source), module, doc: null, symbols: [] };
    if (lang.grammar) {
      const syntax = await extractSyntax(lang.grammar, source);
      file.doc = syntax.doc;
      file.symbols = syntax.symbols;
      for (const imp of syntax.imports) imports.push({ from: e.path, language: lang.grammar, specifier: imp.specifier });
      for (const name of syntax.envVars) {
        if (!envVars.has(name)) envVars.set(name, new Set());
        envVars.get(name)!.add(e.path);
      }
    }
    files.push(file);
  }

  const dataModels: Survey['dataModels'] = [];
  for (const e of tree) {
    if (isIgnoredPath(e.path) || !/\.(prisma|sql)$/.test(e.path) || e.size > MAX_PARSE_BYTES) continue;
    const source = blobs.get(e.sha)?.toString('utf8') ?? '';
    const lines = source.split('\n');
    lines.forEach((line, i) => {
      const prisma = /^\s*(model|enum|view)\s+([A-Za-z_]\w*)\s*\{/.exec(line);
      const sql = /^\s*CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?["`]?([A-Za-z_][\w.]*)["`]?/i.exec(line);
      if (prisma && e.path.endsWith('.prisma')) dataModels.push({ name: prisma[2]!, kind: `Prisma ${prisma[1]}`, file: e.path, line: i + 1 });
      if (sql && e.path.endsWith('.sql')) dataModels.push({ name: sql[1]!, kind: 'SQL table', file: e.path, line: i + 1 });
    });
  }

  // Workspace packages: what a workspace declaration names, else (several manifests) each nested one.
  const manifestDirs = new Set(manifests.map((m) => m.dir));
  const declared = new Set<string>();
  for (const m of manifests) for (const d of matchWorkspaces(m.dir, m.workspaces, manifestDirs)) declared.add(d);
  const nested = manifests.filter((m) => (m.dir !== '' && m.kind !== 'python') || (m.file.endsWith('pyproject.toml') && m.dir !== ''));
  const packageDirs = declared.size ? declared : new Set(nested.map((m) => m.dir));
  const packages = [...packageDirs]
    .sort()
    .map((d) => manifests.find((m) => m.dir === d && m.name) ?? manifests.find((m) => m.dir === d)!)
    .filter(Boolean);

  const modules = new Map<string, ModuleInfo>();
  const packageOf = (dir: string) => [...packageDirs].filter((p) => dir === p || dir.startsWith(`${p}/`)).sort((a, b) => b.length - a.length)[0] ?? null;
  for (const f of files) {
    let m = modules.get(f.module);
    if (!m) {
      m = {
        dir: f.module,
        files: [],
        lines: 0,
        languages: {},
        packageDir: packageOf(f.module),
        doc: null,
        imports: new Map(),
        importedBy: new Map(),
        externals: new Map(),
      };
      modules.set(f.module, m);
    }
    m.files.push(f);
    m.lines += f.lines;
    m.languages[f.language] = (m.languages[f.language] ?? 0) + f.lines;
  }
  for (const m of modules.values()) {
    const readme = readmes.get(m.dir);
    const main =
      m.files.find((f) => /(^|\/)(index|mod|lib|__init__|main|doc)\.\w+$/.test(f.path) && f.doc) ??
      [...m.files].sort((a, b) => b.lines - a.lines).find((f) => f.doc);
    // A package's own source root speaks with the package's description when nothing closer does.
    const isPackageRoot = m.packageDir !== null && (m.dir === m.packageDir || m.dir === `${m.packageDir ? `${m.packageDir}/` : ''}src`);
    m.doc = (readme && firstParagraph(readme)) ?? main?.doc ?? (isPackageRoot ? (packages.find((p) => p.dir === m.packageDir)?.description ?? null) : null);
  }

  const resolve = createImportResolver(
    files.map((f) => f.path),
    manifests,
  );
  const fileModule = new Map(files.map((f) => [f.path, f.module]));
  const fileImports = new Map<string, number>();
  for (const imp of imports) {
    const target = resolve(imp.language, imp.from, imp.specifier);
    const from = modules.get(fileModule.get(imp.from)!)!;
    if (!target) continue;
    if ('external' in target) {
      from.externals.set(target.external, (from.externals.get(target.external) ?? 0) + 1);
      continue;
    }
    if (target.file !== imp.from) {
      const key = `${imp.from}\0${target.file}`;
      fileImports.set(key, (fileImports.get(key) ?? 0) + 1);
    }
    const to = fileModule.get(target.file);
    if (to === undefined || to === from.dir) continue;
    from.imports.set(to, (from.imports.get(to) ?? 0) + 1);
    const toModule = modules.get(to)!;
    toModule.importedBy.set(from.dir, (toModule.importedBy.get(from.dir) ?? 0) + 1);
  }
  const edges = [...modules.values()].flatMap((m) => [...m.imports.entries()].map(([to, count]) => ({ from: m.dir, to, count })));
  const fileEdges = [...fileImports].map(([key, count]) => {
    const [from, to] = key.split('\0') as [string, string];
    return { from, to, count };
  });

  const entryPoints = [
    ...new Set([
      ...manifests
        .flatMap((m) => m.entryPoints)
        .map(
          (e) =>
            files.find((f) => f.path === e || f.path.replace(/\.\w+$/, '') === e.replace(/\.\w+$/, '').replace(/(^|\/)(dist|build|lib)\//, '$1src/'))?.path ??
            e,
        ),
      ...files.filter((f) => ENTRY_NAMES.test(f.path) && (f.path.split('/').length <= 3 || /(^|\/)(cmd|bin)\//.test(f.path))).map((f) => f.path),
    ]),
  ]
    .filter((e) => files.some((f) => f.path === e))
    .sort();

  const langTotals = new Map<string, { files: number; lines: number }>();
  for (const f of files) {
    const t = langTotals.get(f.language) ?? { files: 0, lines: 0 };
    t.files++;
    t.lines += f.lines;
    langTotals.set(f.language, t);
  }
  return {
    headCommit: head.commitHash,
    committedAt: head.committedAt.toISOString(),
    totals: {
      files: tree.length,
      bytes,
      sourceFiles: files.length,
      lines: files.reduce((s, f) => s + f.lines, 0),
      symbols: files.reduce((s, f) => s + f.symbols.length, 0),
    },
    languages: [...langTotals.entries()].map(([name, t]) => ({ name, ...t })).sort((a, b) => b.lines - a.lines),
    manifests,
    packages,
    entryPoints,
    readmes,
    files,
    modules: [...modules.values()].sort((a, b) => a.dir.localeCompare(b.dir)),
    edges,
    fileEdges,
    history: await readHistory(repo, head.committedAt, signal),
    builds,
    envVars: [...envVars.entries()].map(([name, set]) => ({ name, files: [...set].sort() })).sort((a, b) => a.name.localeCompare(b.name)),
    dataModels,
    blobs: new Map(tree.map((e) => [e.path, e.sha])),
  };
}

export { firstParagraph };
