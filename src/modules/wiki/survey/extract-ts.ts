import type { Node, Tree } from 'web-tree-sitter';
import { cleanComment, endLineOf, leadingDoc, lineOf, summarize, unquote, type FileSyntax, type SymbolInfo } from './syntax.ts';

const DECLARATION_KINDS: Record<string, string> = {
  function_declaration: 'function',
  generator_function_declaration: 'function',
  class_declaration: 'class',
  abstract_class_declaration: 'class',
  interface_declaration: 'interface',
  type_alias_declaration: 'type',
  enum_declaration: 'enum',
  lexical_declaration: 'const',
  variable_declaration: 'variable',
};

function declared(decl: Node, doc: string | null, at: Node): SymbolInfo[] {
  const kind = DECLARATION_KINDS[decl.type];
  if (!kind) return [];
  if (decl.type === 'lexical_declaration' || decl.type === 'variable_declaration') {
    return decl.namedChildren
      .filter((d): d is Node => d?.type === 'variable_declarator')
      .map((d) => d.childForFieldName('name'))
      .filter((n): n is Node => n?.type === 'identifier')
      .map((n) => {
        const value = n.parent?.childForFieldName('value');
        const isFn = value && /function|arrow_function/.test(value.type);
        return { name: n.text, kind: isFn ? 'function' : kind, line: lineOf(at), endLine: endLineOf(at), summary: summarize(doc, at) };
      });
  }
  const name = decl.childForFieldName('name');
  return name ? [{ name: name.text, kind, line: lineOf(at), endLine: endLineOf(at), summary: summarize(doc, at) }] : [];
}

/** TypeScript and JavaScript: ES imports, re-exports, `require` and `import()`; exported declarations. */
export function extractTypeScript(tree: Tree): FileSyntax {
  const root = tree.rootNode;
  const imports: FileSyntax['imports'] = [];
  const symbols: SymbolInfo[] = [];
  // A comment at the top, set apart by a blank line, speaks for the file rather than the next declaration.
  const first = root.namedChildren[0];
  const next = first?.nextNamedSibling;
  const doc = first?.type === 'comment' && (!next || next.startPosition.row > first.endPosition.row + 1) ? fileDoc(first.text) : null;
  for (const node of root.namedChildren) {
    if (!node) continue;
    if (node.type === 'import_statement' || node.type === 'export_statement') {
      const source = node.childForFieldName('source');
      if (source) imports.push({ specifier: unquote(source.text), line: lineOf(node) });
    }
    if (node.type === 'export_statement') {
      const decl = node.childForFieldName('declaration');
      if (decl) symbols.push(...declared(decl, leadingDoc(node), node));
      else if (node.namedChildren.some((c) => c?.type === 'export_clause') && !node.childForFieldName('source')) {
        for (const spec of node.descendantsOfType('export_specifier')) {
          const name = spec?.childForFieldName('alias') ?? spec?.childForFieldName('name');
          if (name) symbols.push({ name: name.text, kind: 'export', line: lineOf(node), endLine: endLineOf(node), summary: summarize(leadingDoc(node), node) });
        }
      }
    }
  }
  const envVars = new Set<string>();
  for (const call of root.descendantsOfType(['call_expression', 'member_expression', 'subscript_expression'])) {
    if (!call) continue;
    if (call.type === 'call_expression') {
      const fn = call.childForFieldName('function');
      const arg = call.childForFieldName('arguments')?.namedChildren[0];
      if (fn && arg?.type === 'string' && (fn.text === 'require' || fn.type === 'import')) {
        imports.push({ specifier: unquote(arg.text), line: lineOf(call) });
      }
    } else {
      const object = call.childForFieldName('object');
      if (object?.text !== 'process.env') continue;
      const prop = call.type === 'member_expression' ? call.childForFieldName('property')?.text : unquote(call.childForFieldName('index')?.text ?? '');
      if (prop && /^[A-Z_][A-Z0-9_]*$/.test(prop)) envVars.add(prop);
    }
  }
  return { imports, symbols, doc, envVars: [...envVars] };
}

function fileDoc(text: string): string | null {
  const cleaned = cleanComment(text);
  return cleaned && !/^(eslint|@ts-|prettier|biome-ignore|#!)/.test(cleaned) ? cleaned : null;
}
