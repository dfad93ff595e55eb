import { exportFileOf, markdownLinks, MAX_PAGE_BYTES, type CitedSource, type PageNode, type WikiPageContent } from './page.ts';

export interface DraftPage extends PageNode {
  markdown: string;
  sources: CitedSource[];
  symbols: string[];
  reused?: boolean;
  degraded?: string | null;
}

/** What `.wiki-meta.json` holds (plus the survey's figures for generated runs). */
export interface WikiMeta {
  generatedAt: string;
  pageCount: number;
  topLevelSections: string[];
  pageOrder: string[];
}

/** Pages in reading order: each top-level page followed by its children. */
export function treeOrder<T extends PageNode>(pages: T[]): T[] {
  const byParent = new Map<string | null, T[]>();
  for (const p of pages) byParent.set(p.parentId, [...(byParent.get(p.parentId) ?? []), p]);
  const sorted = (list: T[] = []) => [...list].sort((a, b) => a.position - b.position || a.path.localeCompare(b.path));
  return sorted(byParent.get(null)).flatMap((top) => [top, ...sorted(byParent.get(top.id))]);
}

export function exportFiles(pages: PageNode[]): Map<string, string> {
  const parents = new Set(pages.map((p) => p.parentId));
  return new Map(pages.map((p) => [p.id, exportFileOf(p, parents.has(p.id))]));
}

/**
 * The cross-link audit and the run's meta: every relative `.md` link must reach a page of the run.
 * `onDeadLink` decides what a dead link does (generation rewrites it to plain text; an upload is
 * refused). Pages over 500 KB are refused the same way.
 */
export function assemblePages(
  drafts: DraftPage[],
  generatedAt: Date,
  onDeadLink: (page: DraftPage, target: string) => 'unlink' | 'refuse',
): { pages: WikiPageContent[]; meta: WikiMeta; problems: string[] } {
  const files = exportFiles(drafts);
  const idByFile = new Map([...files].map(([id, file]) => [file, id]));
  const problems: string[] = [];
  const pages = treeOrder(drafts).map((draft): WikiPageContent => {
    const own = files.get(draft.id)!;
    let markdown = draft.markdown;
    const linksOut = new Set<string>();
    for (const target of markdownLinks(markdown, own)) {
      const id = idByFile.get(target);
      if (id) {
        linksOut.add(id);
        continue;
      }
      if (onDeadLink(draft, target) === 'refuse') problems.push(`page ${draft.path} links to ${target}, which is not a page of the run`);
      else
        markdown = markdown.replace(/\[([^\]]*)\]\(([^)\s#]+\.md)(#[^)]*)?\)/g, (whole, text: string, href: string) =>
          markdownLinks(`](${href})`, own)[0] === target ? text : whole,
        );
    }
    if (Buffer.byteLength(markdown) > MAX_PAGE_BYTES)
      problems.push(`page ${draft.path} is ${Buffer.byteLength(markdown)} bytes, more than the ${MAX_PAGE_BYTES}-byte limit of a page`);
    return { ...draft, markdown, linksOut: [...linksOut].sort() };
  });
  const meta: WikiMeta = {
    generatedAt: generatedAt.toISOString(),
    pageCount: pages.length,
    topLevelSections: pages.filter((p) => p.parentId === null).map((p) => p.path),
    pageOrder: pages.map((p) => p.path),
  };
  return { pages, meta, problems };
}
