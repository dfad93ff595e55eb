import { BadRequest } from '../../lib/errors.ts';
import { assemblePages, type DraftPage } from './assemble.ts';
import { pageIdOf, type WikiPageContent } from './page.ts';
import type { CreateRunBody } from './schemas.ts';
import { identifierWords } from './search-text.ts';

type UploadedPage = NonNullable<CreateRunBody['pages']>[number];

/** Symbols an uploaded page declares in inline code of its headings, e.g. "## `createSshClient`". */
function headingSymbols(markdown: string): string[] {
  return [...markdown.matchAll(/^#{1,6}\s+.*?`([A-Za-z_][\w.]*)`/gm)].map((m) => m[1]!.toLowerCase()).filter((s) => identifierWords(s).length > 0);
}

/**
 * Pages a client generated elsewhere, checked the way generated runs are assembled: unique paths,
 * every `a/b` under an uploaded page `a`, no relative link to a page the upload lacks. Every
 * problem is named in one 400.
 */
export function uploadedPages(pages: UploadedPage[], now: Date): { pages: WikiPageContent[]; meta: ReturnType<typeof assemblePages>['meta'] } {
  const problems: string[] = [];
  const paths = new Set<string>();
  for (const p of pages) {
    if (paths.has(p.path)) problems.push(`page ${p.path} is sent twice`);
    paths.add(p.path);
  }
  for (const p of pages) {
    const parent = p.path.includes('/') ? p.path.split('/')[0]! : null;
    if (parent && !paths.has(parent)) problems.push(`page ${p.path} has no parent page ${parent}; send a page with path ${parent} too`);
  }
  const counters = new Map<string | null, number>();
  const drafts: DraftPage[] = pages.map((p) => {
    const parent = p.path.includes('/') ? p.path.split('/')[0]! : null;
    const position = p.order ?? counters.get(parent) ?? 0;
    counters.set(parent, position + 1);
    return {
      id: pageIdOf(p.path),
      path: p.path,
      title: p.title,
      parentId: parent ? pageIdOf(parent) : null,
      position,
      markdown: p.markdown,
      sources: (p.sources ?? []).map((s) => ({ path: s.path, blobSha: s.blobSha ?? '', lines: s.lines ?? [] })),
      symbols: headingSymbols(p.markdown),
    };
  });
  if (problems.length) throw uploadRefused(problems);
  const assembled = assemblePages(drafts, now, () => 'refuse');
  if (assembled.problems.length) throw uploadRefused(assembled.problems);
  return { pages: assembled.pages, meta: assembled.meta };
}

function uploadRefused(problems: string[]): BadRequest {
  return new BadRequest(
    `The uploaded wiki is not consistent: ${problems.slice(0, 10).join('; ')}${problems.length > 10 ? ` (and ${problems.length - 10} more)` : ''}`,
    {
      metadata: { errors: problems.slice(0, 50).map((message) => ({ field: 'pages', message })) },
    },
  );
}
