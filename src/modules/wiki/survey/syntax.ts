import type { Node } from 'web-tree-sitter';

/** What the survey learns from one source file's syntax tree. */
export interface FileSyntax {
  /** Import specifiers as written, with their line (1-based). */
  imports: { specifier: string; line: number }[];
  /** Public symbols: exported, `pub`, `public` or (Python, Go) named as public. */
  symbols: SymbolInfo[];
  /** The file's own doc comment or docstring, cleaned. */
  doc: string | null;
  /** Environment variables the code reads by name. */
  envVars: string[];
}

export interface SymbolInfo {
  name: string;
  kind: string;
  line: number;
  endLine: number;
  /** First sentence of its doc comment, else its declaration's first line. */
  summary: string;
}

export const lineOf = (node: Node) => node.startPosition.row + 1;
export const endLineOf = (node: Node) => node.endPosition.row + 1;

/** A string literal's value without quotes. */
export function unquote(text: string): string {
  return text.replace(/^[rbuf]*(['"`]{1,3})([\s\S]*)\1$/i, '$2');
}

/** Comment text without its markers (`//`, `/** *\/`, `#`, `///`, leading `*`). */
export function cleanComment(text: string): string {
  return text
    .replace(/^\/\*+|\*+\/$/g, '')
    .split('\n')
    .map((l) => l.replace(/^\s*(\/\/[\/!]?|#|\*(?!\/))\s?/, '').trimEnd())
    .join('\n')
    .trim();
}

const COMMENT_TYPES = new Set(['comment', 'line_comment', 'block_comment']);

/** The comments directly above `node` (no blank line between), cleaned and joined. */
export function leadingDoc(node: Node): string | null {
  const parts: string[] = [];
  let cursor = node.previousSibling;
  let expectRow = node.startPosition.row - 1;
  while (cursor && COMMENT_TYPES.has(cursor.type) && cursor.endPosition.row >= expectRow - 0) {
    parts.unshift(cleanComment(cursor.text));
    expectRow = cursor.startPosition.row - 1;
    cursor = cursor.previousSibling;
  }
  const text = parts.join('\n').trim();
  return text || null;
}

/** A one-line summary: the doc's first sentence, else the declaration's first line. */
export function summarize(doc: string | null, node: Node): string {
  const source = doc
    ?.split(/\n\s*\n/)[0]
    ?.replace(/\s+/g, ' ')
    .trim();
  if (source) {
    const sentence = /^(.+?[.!?])(\s|$)/.exec(source)?.[1] ?? source;
    return clip(sentence, 160);
  }
  return clip(
    node.text
      .split('\n')[0]!
      .replace(/\s*\{\s*$/, '')
      .trim(),
    120,
  );
}

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1).trimEnd()}…` : text;
}

/** The string argument of a call like `os.getenv("X")` whose callee's text is one of `callees`. */
export function envCallArgument(call: Node, callees: string[]): string | undefined {
  const callee = call.childForFieldName('function') ?? call.namedChildren[0];
  if (!callee || !callees.includes(callee.text.replace(/\s+/g, ''))) return undefined;
  const args = call.childForFieldName('arguments') ?? call.namedChildren[1];
  const first = args?.namedChildren[0];
  if (!first || !/string/.test(first.type)) return undefined;
  const value = unquote(first.text);
  return /^[A-Z_][A-Z0-9_]*$/.test(value) ? value : undefined;
}
