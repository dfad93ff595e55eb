import { createRequire } from 'node:module';
import { Language, Parser } from 'web-tree-sitter';
import type { ParsedLanguage } from './languages.ts';

const require = createRequire(import.meta.url);

// Each grammar package ships its own WASM build for the web binding, so no grammar is compiled here.
const WASM: Record<ParsedLanguage, string> = {
  typescript: 'tree-sitter-typescript/tree-sitter-typescript.wasm',
  tsx: 'tree-sitter-typescript/tree-sitter-tsx.wasm',
  javascript: 'tree-sitter-javascript/tree-sitter-javascript.wasm',
  python: 'tree-sitter-python/tree-sitter-python.wasm',
  go: 'tree-sitter-go/tree-sitter-go.wasm',
  rust: 'tree-sitter-rust/tree-sitter-rust.wasm',
  java: 'tree-sitter-java/tree-sitter-java.wasm',
};

let ready: Promise<void> | undefined;
const languages = new Map<ParsedLanguage, Promise<Language>>();

/** A parser for `language`; the runtime and each grammar load once per process. */
export async function parserFor(language: ParsedLanguage): Promise<Parser> {
  ready ??= Parser.init();
  await ready;
  let loaded = languages.get(language);
  if (!loaded) {
    loaded = Language.load(require.resolve(WASM[language]));
    languages.set(language, loaded);
  }
  const parser = new Parser();
  parser.setLanguage(await loaded);
  return parser;
}
