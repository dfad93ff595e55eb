import type { Db } from '../../db/client.ts';
import type { WikiPageContent } from './page.ts';
import { searchParts } from './search-text.ts';

/**
 * Writes a run's pages and their search documents. The tsvector is computed by the database with
 * weights title (and defined symbols) A, headings B, body C, in one statement for all pages.
 */
export async function storePages(db: Db, runId: string, pages: WikiPageContent[]): Promise<void> {
  if (!pages.length) return;
  const parts = pages.map((p) => searchParts(p));
  await db.wikiPage.createMany({
    data: pages.map((p, i) => ({
      runId,
      id: p.id,
      path: p.path,
      title: p.title,
      parentId: p.parentId,
      position: p.position,
      markdown: p.markdown,
      sources: p.sources as object[],
      linksOut: p.linksOut,
      symbols: p.symbols,
      reused: p.reused ?? false,
      degraded: p.degraded ?? null,
      plain: parts[i]!.plain,
    })),
  });
  await db.$executeRaw`
    UPDATE wiki_pages AS p SET search =
      setweight(to_tsvector('english', u.title), 'A') ||
      setweight(to_tsvector('english', u.headings), 'B') ||
      setweight(to_tsvector('english', u.body), 'C')
    FROM unnest(${pages.map((p) => p.id)}::text[], ${parts.map((x) => x.title)}::text[], ${parts.map((x) => x.headings)}::text[], ${parts.map((x) => x.body)}::text[])
      AS u(id, title, headings, body)
    WHERE p.run_id = ${runId}::uuid AND p.id = u.id`;
}
