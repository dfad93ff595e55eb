import { extractGo } from './extract-go.ts';
import { extractJava } from './extract-java.ts';
import { extractPython } from './extract-python.ts';
import { extractRust } from './extract-rust.ts';
import { extractTypeScript } from './extract-ts.ts';
import { parserFor } from './grammars.ts';
import type { ParsedLanguage } from './languages.ts';
import type { FileSyntax } from './syntax.ts';

const EXTRACTORS: Record<ParsedLanguage, (tree: import('web-tree-sitter').Tree) => FileSyntax> = {
  typescript: extractTypeScript,
  tsx: extractTypeScript,
  javascript: extractTypeScript,
  python: extractPython,
  go: extractGo,
  rust: extractRust,
  java: extractJava,
};

// Parsers are reused across files: creating one per file costs more than parsing a small file.
const parsers = new Map<ParsedLanguage, Awaited<ReturnType<typeof parserFor>>>();

/** Parses `text` with the language's grammar and extracts imports, public symbols, doc and env reads. */
export async function extractSyntax(language: ParsedLanguage, text: string): Promise<FileSyntax> {
  let parser = parsers.get(language);
  if (!parser) {
    parser = await parserFor(language);
    parsers.set(language, parser);
  }
  const tree = parser.parse(text);
  if (!tree) return { imports: [], symbols: [], doc: null, envVars: [] };
  try {
    return EXTRACTORS[language](tree);
  } finally {
    // Trees live in the WASM heap, which the garbage collector does not see.
    tree.delete();
  }
}
