import { MAX_PAGES, pageIdOf, type PageNode } from './page.ts';
import type { ModuleInfo, Survey } from './survey/survey.ts';

/** Directories with fewer lines than this are listed as skipped rather than given a page. */
export const MIN_MODULE_LINES = 10;

export interface ModulePage extends PageNode {
  module: ModuleInfo;
}

export interface WikiPlan {
  pages: PageNode[];
  /** The lens the code is presented through: `packages` for workspaces, else `systems`. */
  lens: { id: string; path: string; title: string };
  modulePages: ModulePage[];
  /** Every source directory without a page, with the reason. */
  skipped: { dir: string; reason: string }[];
  hasChildren(id: string): boolean;
  byId: Map<string, PageNode>;
  moduleIdOf(dir: string): string | undefined;
}

function slug(dir: string): string {
  return dir
    ? dir
        .toLowerCase()
        .replace(/[^a-z0-9]+/g, '-')
        .replace(/^-+|-+$/g, '') || 'root'
    : 'root';
}

/**
 * The page tree: overview/ (index, architecture, getting-started, glossary), by-the-numbers, one
 * lens of the code with a page per non-trivial source directory, reference/ (configuration,
 * data models, dependencies). Two levels at most, 200 pages at most.
 */
export function planWiki(survey: Survey): WikiPlan {
  const pages: PageNode[] = [];
  const add = (path: string, title: string, parent: string | null) => {
    const siblings = pages.filter((p) => p.parentId === (parent ? pageIdOf(parent) : null));
    const page = { id: pageIdOf(path), path, title, parentId: parent ? pageIdOf(parent) : null, position: siblings.length };
    pages.push(page);
    return page;
  };
  add('overview', 'Overview', null);
  add('overview/architecture', 'Architecture', 'overview');
  add('overview/getting-started', 'Getting started', 'overview');
  add('overview/glossary', 'Glossary', 'overview');
  add('by-the-numbers', 'By the numbers', null);
  const lensPath = survey.packages.length >= 2 ? 'packages' : 'systems';
  const lens = add(lensPath, lensPath === 'packages' ? 'Packages' : 'Systems', null);
  const reference = ['reference/configuration', 'reference/data-models', 'reference/dependencies'];

  const budget = MAX_PAGES - pages.length - 1 - reference.length;
  const skipped: WikiPlan['skipped'] = [];
  const candidates: ModuleInfo[] = [];
  for (const m of survey.modules) {
    if (m.lines < MIN_MODULE_LINES) skipped.push({ dir: m.dir, reason: `it holds only ${m.lines} lines of code (${m.files.map((f) => f.path).join(', ')})` });
    else candidates.push(m);
  }
  const kept = [...candidates].sort((a, b) => b.lines - a.lines || a.dir.localeCompare(b.dir)).slice(0, budget);
  const keptSet = new Set(kept);
  for (const m of candidates)
    if (!keptSet.has(m))
      skipped.push({
        dir: m.dir,
        reason: `the run's ${MAX_PAGES}-page limit was reached, and its ${m.lines} lines are fewer than those of the directories that got pages`,
      });
  const used = new Set<string>();
  const modulePages: ModulePage[] = [];
  for (const m of kept.sort((a, b) => a.dir.localeCompare(b.dir))) {
    let s = slug(m.dir);
    for (let n = 2; used.has(s); n++) s = `${slug(m.dir)}-${n}`;
    used.add(s);
    modulePages.push({ ...add(`${lensPath}/${s}`, m.dir || '(repository root)', lensPath), module: m });
  }
  add('reference', 'Reference', null);
  add('reference/configuration', 'Configuration', 'reference');
  add('reference/data-models', 'Data models', 'reference');
  add('reference/dependencies', 'Dependencies', 'reference');

  const parents = new Set(pages.map((p) => p.parentId).filter(Boolean));
  const byId = new Map(pages.map((p) => [p.id, p]));
  const moduleIds = new Map(modulePages.map((p) => [p.module.dir, p.id]));
  return {
    pages,
    lens: { id: lens.id, path: lens.path, title: lens.title },
    modulePages,
    skipped: skipped.sort((a, b) => a.dir.localeCompare(b.dir)),
    hasChildren: (id) => parents.has(id),
    byId,
    moduleIdOf: (dir) => moduleIds.get(dir),
  };
}
