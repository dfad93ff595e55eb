import type { Tree } from 'web-tree-sitter';
import { envCallArgument, endLineOf, leadingDoc, lineOf, summarize, type FileSyntax, type SymbolInfo } from './syntax.ts';

const ITEM_KINDS: Record<string, string> = {
  function_item: 'function',
  struct_item: 'struct',
  enum_item: 'enum',
  trait_item: 'trait',
  type_item: 'type',
  const_item: 'const',
  static_item: 'static',
  mod_item: 'module',
};

/** Rust: `use` paths and `mod` declarations; `pub` items; the crate or module's `//!` comment. */
export function extractRust(tree: Tree): FileSyntax {
  const root = tree.rootNode;
  const imports: FileSyntax['imports'] = [];
  const symbols: SymbolInfo[] = [];
  const inner: string[] = [];
  for (const node of root.namedChildren) {
    if (!node) continue;
    if (node.type === 'line_comment' && node.text.startsWith('//!')) inner.push(node.text.replace(/^\/\/!\s?/, ''));
    if (node.type === 'use_declaration') {
      const arg = node.childForFieldName('argument');
      if (arg) imports.push({ specifier: arg.text.replace(/\s+/g, ''), line: lineOf(node) });
    }
    if (node.type === 'mod_item' && !node.childForFieldName('body')) {
      const name = node.childForFieldName('name')?.text;
      if (name) imports.push({ specifier: `self::${name}`, line: lineOf(node) });
    }
    const kind = ITEM_KINDS[node.type];
    const isPub = node.namedChildren.some((c) => c?.type === 'visibility_modifier');
    if (kind && isPub) {
      const name = node.childForFieldName('name')?.text;
      if (name) symbols.push({ name, kind, line: lineOf(node), endLine: endLineOf(node), summary: summarize(leadingDoc(node), node) });
    }
  }
  const envVars = new Set<string>();
  for (const call of root.descendantsOfType('call_expression')) {
    const name = call && envCallArgument(call, ['env::var', 'std::env::var', 'env::var_os', 'std::env::var_os']);
    if (name) envVars.add(name);
  }
  return { imports, symbols, doc: inner.join('\n').trim() || null, envVars: [...envVars] };
}
