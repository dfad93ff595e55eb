import type { Tree } from 'web-tree-sitter';
import { envCallArgument, endLineOf, leadingDoc, lineOf, summarize, unquote, type FileSyntax, type SymbolInfo } from './syntax.ts';

const exported = (name: string) => /^[A-Z]/.test(name);

/** Go: import specs; exported (capitalised) functions, methods and types; the package comment. */
export function extractGo(tree: Tree): FileSyntax {
  const root = tree.rootNode;
  const imports: FileSyntax['imports'] = [];
  const symbols: SymbolInfo[] = [];
  let doc: string | null = null;
  for (const node of root.namedChildren) {
    if (!node) continue;
    if (node.type === 'package_clause') doc = leadingDoc(node);
    if (node.type === 'import_declaration') {
      for (const spec of node.descendantsOfType('import_spec')) {
        const p = spec?.childForFieldName('path');
        if (p) imports.push({ specifier: unquote(p.text), line: lineOf(spec!) });
      }
    }
    if (node.type === 'function_declaration' || node.type === 'method_declaration') {
      const name = node.childForFieldName('name')?.text;
      if (name && exported(name)) {
        const receiver =
          node.type === 'method_declaration' ? node.childForFieldName('receiver')?.text.replace(/[()*]/g, '').trim().split(/\s+/).pop() : undefined;
        symbols.push({
          name: receiver ? `${receiver}.${name}` : name,
          kind: receiver ? 'method' : 'function',
          line: lineOf(node),
          endLine: endLineOf(node),
          summary: summarize(leadingDoc(node), node),
        });
      }
    }
    if (node.type === 'type_declaration') {
      for (const spec of node.namedChildren) {
        const name = spec?.childForFieldName('name')?.text;
        if (!spec || !name || !exported(name)) continue;
        const typeNode = spec.childForFieldName('type');
        const kind = typeNode?.type === 'struct_type' ? 'struct' : typeNode?.type === 'interface_type' ? 'interface' : 'type';
        symbols.push({ name, kind, line: lineOf(node), endLine: endLineOf(node), summary: summarize(leadingDoc(node), spec) });
      }
    }
  }
  const envVars = new Set<string>();
  for (const call of root.descendantsOfType('call_expression')) {
    const name = call && envCallArgument(call, ['os.Getenv', 'os.LookupEnv']);
    if (name) envVars.add(name);
  }
  return { imports, symbols, doc, envVars: [...envVars] };
}
