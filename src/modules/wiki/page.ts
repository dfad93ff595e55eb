/** A source file a page cites: the blob it was written from and the lines it rests on. */
export interface CitedSource {
  path: string;
  blobSha: string;
  lines: [number, number][];
}

/** A page of a run's tree: `path` is slash-separated slugs, at most two deep. */
export interface PageNode {
  id: string;
  path: string;
  title: string;
  parentId: string | null;
  position: number;
}

export interface WikiPageContent extends PageNode {
  markdown: string;
  sources: CitedSource[];
  linksOut: string[];
  /** Lower-cased symbols the page defines. */
  symbols: string[];
  reused?: boolean;
  degraded?: string | null;
}

export const MAX_PAGES = 200;
export const MAX_PAGE_BYTES = 500 * 1024;

/** Page ids are their paths with `.` for `/`: stable across runs, so pages can be matched and reused. */
export const pageIdOf = (path: string) => path.replace(/\//g, '.');

/** Where a page lives in an export: a page with children is its folder's index.md. */
export function exportFileOf(page: Pick<PageNode, 'path' | 'id'>, hasChildren: boolean): string {
  return hasChildren ? `${page.path}/index.md` : `${page.path}.md`;
}

/** The relative Markdown link from one page's export file to another's. */
export function relativeLink(fromFile: string, toFile: string): string {
  const from = fromFile.split('/').slice(0, -1);
  const to = toFile.split('/');
  let i = 0;
  while (i < from.length && i < to.length - 1 && from[i] === to[i]) i++;
  return [...Array(from.length - i).fill('..'), ...to.slice(i)].join('/') || toFile;
}

/** Markdown links in `markdown` that point at `.md` files (not URLs), resolved against `fromFile`. */
export function markdownLinks(markdown: string, fromFile: string): string[] {
  const base = fromFile.split('/').slice(0, -1);
  const out: string[] = [];
  for (const m of markdown.matchAll(/\]\(([^)\s#]+\.md)(#[^)]*)?\)/g)) {
    const target = m[1]!;
    if (/^[a-z]+:/i.test(target)) continue;
    const parts = [...base];
    for (const seg of target.split('/')) {
      if (seg === '..') parts.pop();
      else if (seg !== '.') parts.push(seg);
    }
    out.push(parts.join('/'));
  }
  return out;
}
