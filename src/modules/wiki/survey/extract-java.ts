import type { Node, Tree } from 'web-tree-sitter';
import { endLineOf, leadingDoc, lineOf, summarize, type FileSyntax, type SymbolInfo } from './syntax.ts';

const TYPE_KINDS: Record<string, string> = {
  class_declaration: 'class',
  interface_declaration: 'interface',
  enum_declaration: 'enum',
  record_declaration: 'record',
  annotation_type_declaration: 'annotation',
};

const isPublic = (node: Node) => node.namedChildren.some((c) => c?.type === 'modifiers' && /\bpublic\b/.test(c.text));

/** Java: imports; public top-level types and their public methods; the type's Javadoc. */
export function extractJava(tree: Tree): FileSyntax {
  const root = tree.rootNode;
  const imports: FileSyntax['imports'] = [];
  const symbols: SymbolInfo[] = [];
  let doc: string | null = null;
  for (const node of root.namedChildren) {
    if (!node) continue;
    if (node.type === 'import_declaration') {
      imports.push({ specifier: node.text.replace(/^import\s+(static\s+)?|;$/g, '').trim(), line: lineOf(node) });
    }
    const kind = TYPE_KINDS[node.type];
    if (!kind || !isPublic(node)) continue;
    const name = node.childForFieldName('name')?.text;
    if (!name) continue;
    const typeDoc = leadingDoc(node);
    doc ??= typeDoc;
    symbols.push({ name, kind, line: lineOf(node), endLine: endLineOf(node), summary: summarize(typeDoc, node) });
    for (const member of node.childForFieldName('body')?.namedChildren ?? []) {
      if (member?.type !== 'method_declaration' || !isPublic(member)) continue;
      const method = member.childForFieldName('name')?.text;
      if (method)
        symbols.push({
          name: `${name}.${method}`,
          kind: 'method',
          line: lineOf(member),
          endLine: endLineOf(member),
          summary: summarize(leadingDoc(member), member),
        });
    }
  }
  const envVars = new Set<string>();
  for (const call of root.descendantsOfType('method_invocation')) {
    if (!call) continue;
    const target = `${call.childForFieldName('object')?.text ?? ''}.${call.childForFieldName('name')?.text ?? ''}`;
    const arg = call.childForFieldName('arguments')?.namedChildren[0];
    if (target === 'System.getenv' && arg?.type === 'string_literal') envVars.add(arg.text.replace(/^"|"$/g, ''));
  }
  return { imports, symbols, doc, envVars: [...envVars] };
}
