/**
 * Text for the search documents. Identifiers are indexed whole and split into their words, so
 * `createSshClient` is found by `createSshClient`, by `ssh client` and by the phrase
 * "create ssh client"; the same splitting is applied to queries (search.ts).
 */

const IDENTIFIER = /[A-Za-z][A-Za-z0-9]*(?:[_-]?[A-Za-z0-9]+)*/g;

/** The words of an identifier: camelCase, PascalCase, snake_case, kebab-case, ACRONYMWords. */
export function identifierWords(identifier: string): string[] {
  return identifier
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
    .split(/[\s_-]+/)
    .map((w) => w.toLowerCase())
    .filter(Boolean);
}

/** `text` with every compound identifier followed by its words. */
function expandIdentifiers(text: string): string {
  return text.replace(IDENTIFIER, (word) => {
    const parts = identifierWords(word);
    return parts.length > 1 ? `${word} ${parts.join(' ')}` : word;
  });
}

/** Markdown reduced to its readable text: no code fences of diagrams, link targets, table rules or markup. */
function markdownToPlain(markdown: string): string {
  return markdown
    .replace(/```mermaid[\s\S]*?```/g, ' ')
    .replace(/```[^\n]*\n([\s\S]*?)```/g, '$1')
    .replace(/!\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/^\s*\|?\s*:?-{3,}.*$/gm, ' ')
    .replace(/[|`*_>#~]+/g, ' ')
    .replace(/[ \t]+/g, ' ')
    .replace(/\n{2,}/g, '\n')
    .trim();
}

function headingsOf(markdown: string): string {
  return [...markdown.replace(/```[\s\S]*?```/g, '').matchAll(/^#{2,6}\s+(.+)$/gm)].map((m) => m[1]).join('\n');
}

const MAX_BODY_CHARS = 200_000;

/** The three weighted parts of a page's search document, identifiers expanded. */
export function searchParts(page: { title: string; markdown: string; symbols: string[] }) {
  const plain = markdownToPlain(page.markdown);
  return {
    title: expandIdentifiers(`${page.title} ${page.symbols.join(' ')}`),
    headings: expandIdentifiers(markdownToPlain(headingsOf(page.markdown))),
    body: expandIdentifiers(plain.slice(0, MAX_BODY_CHARS)),
    plain: escapeHtml(plain.slice(0, MAX_BODY_CHARS)),
  };
}

/** Snippets are HTML (matches in <mark>), so the page text they are cut from is escaped first. */
function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}
