import { Prisma } from '../../generated/prisma/client.ts';
import type { Db } from '../../db/client.ts';
import { BadRequest } from '../../lib/errors.ts';
import { identifierWords } from './search-text.ts';

/**
 * A query in the small language users type: words (all must match), "quoted phrases", `prefix*`,
 * identifiers in any case style (`createSshClient`, `ssh_client`). Returns a to_tsquery string of
 * sanitised lexemes and the lower-cased identifiers it names, for the defining-page boost.
 */
function parseSearchQuery(q: string): { tsquery: string; symbols: string[] } {
  const terms: string[] = [];
  const symbols: string[] = [];
  const lexeme = (w: string) => w.toLowerCase().replace(/[^a-z0-9]/g, '');
  const wordTerm = (raw: string) => {
    const prefix = raw.endsWith('*');
    const word = raw.replace(/\*+$/, '');
    const parts = identifierWords(word).map(lexeme).filter(Boolean);
    if (!parts.length) return undefined;
    const star = prefix ? ':*' : '';
    if (parts.length === 1) return `'${parts[0]}'${star}`;
    const whole = lexeme(word);
    symbols.push(word.toLowerCase());
    return `('${whole}'${star} | ${parts.map((p, i) => `'${p}'${i === parts.length - 1 ? star : ''}`).join(' <-> ')})`;
  };
  for (const m of q.matchAll(/"([^"]*)"|(\S+)/g)) {
    if (m[1] !== undefined) {
      const words = m[1]
        .split(/\s+/)
        .flatMap((w) => identifierWords(w))
        .map(lexeme)
        .filter(Boolean);
      if (words.length) terms.push(words.length === 1 ? `'${words[0]}'` : `(${words.map((w) => `'${w}'`).join(' <-> ')})`);
      continue;
    }
    const raw = m[2]!;
    if (/^[A-Za-z_][\w.]*$/.test(raw) && raw.length > 1) symbols.push(raw.toLowerCase());
    for (const piece of raw.split(/[^\w*-]+/)) {
      const t = piece && wordTerm(piece);
      if (t) terms.push(t);
    }
  }
  if (!terms.length) throw new BadRequest('The query has nothing to search for: use letters or digits, "quoted phrases" or prefix* words');
  return { tsquery: terms.join(' & '), symbols: [...new Set(symbols)] };
}

/**
 * ts_headline parses the whole text it is given, which dominated search time on long pages; the
 * snippet is cut from the first 16,000 characters of the page (ranking still sees the whole page).
 */
const SNIPPET_SOURCE_CHARS = 16_000;

export interface SearchHit {
  pageId: string;
  title: string;
  path: string;
  snippet: string;
  rank: number;
  definesSymbol: boolean;
}

/**
 * Ranked full-text search of one run's pages: pages that define a symbol the query names first,
 * then ts_rank over the weighted document (normalised by length, so long pages do not win by
 * size), then path. Snippets are cut only for the hits returned.
 */
export async function searchRun(db: Db, runId: string, q: string, limit: number): Promise<SearchHit[]> {
  const { tsquery, symbols } = parseSearchQuery(q);
  const rows = await db.$queryRaw<{ id: string; title: string; path: string; rank: number; defines: boolean; snippet: string }[]>(Prisma.sql`
    WITH query AS (SELECT to_tsquery('english', ${tsquery}) AS q),
    hits AS (
      SELECT p.id, p.title, p.path, p.plain,
             ts_rank(p.search, query.q, 1)::float8 AS rank,
             (p.symbols && ${symbols}::text[]) AS defines
      FROM wiki_pages p, query
      WHERE p.run_id = ${runId}::uuid AND p.search @@ query.q
      ORDER BY defines DESC, rank DESC, p.path
      LIMIT ${limit}
    )
    SELECT hits.id, hits.title, hits.path, hits.rank, hits.defines,
           ts_headline('english', left(hits.plain, ${SNIPPET_SOURCE_CHARS}), query.q, 'StartSel=<mark>, StopSel=</mark>, MaxWords=30, MinWords=12, MaxFragments=2, FragmentDelimiter=" … "') AS snippet
    FROM hits, query
    ORDER BY hits.defines DESC, hits.rank DESC, hits.path`);
  return rows.map((r) => ({ pageId: r.id, title: r.title, path: r.path, snippet: r.snippet, rank: Number(r.rank), definesSymbol: r.defines }));
}
