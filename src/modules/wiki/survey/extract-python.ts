import type { Node, Tree } from 'web-tree-sitter';
import { envCallArgument, endLineOf, lineOf, summarize, unquote, type FileSyntax, type SymbolInfo } from './syntax.ts';

/** The docstring of a module, class or function body: its first statement when that is a string. */
function docstring(block: Node | null): string | null {
  const first = block?.namedChildren[0];
  const str = first?.type === 'expression_statement' ? first.namedChildren[0] : null;
  if (str?.type !== 'string') return null;
  return (
    unquote(str.text)
      .replace(/^\s+|\s+$/g, '')
      .replace(/\n[ \t]+/g, '\n') || null
  );
}

/** Python: `import a.b`, `from .x import y`; public (no leading `_`) top-level functions and classes. */
export function extractPython(tree: Tree): FileSyntax {
  const root = tree.rootNode;
  const imports: FileSyntax['imports'] = [];
  const symbols: SymbolInfo[] = [];
  for (const node of root.descendantsOfType(['import_statement', 'import_from_statement'])) {
    if (!node) continue;
    if (node.type === 'import_statement') {
      for (const name of node.namedChildren) {
        const dotted = name?.type === 'aliased_import' ? name.childForFieldName('name') : name;
        if (dotted) imports.push({ specifier: dotted.text, line: lineOf(node) });
      }
    } else {
      const module = node.childForFieldName('module_name');
      if (!module) continue;
      // `from . import x` names modules, not symbols: each is an import of `.x`.
      if (module.type === 'relative_import' && !module.namedChildren.some((c) => c?.type === 'dotted_name')) {
        for (const name of node.childrenForFieldName('name')) {
          const n = name?.type === 'aliased_import' ? name.childForFieldName('name') : name;
          if (n) imports.push({ specifier: `${module.text}${n.text}`, line: lineOf(node) });
        }
      } else imports.push({ specifier: module.text, line: lineOf(node) });
    }
  }
  for (const child of root.namedChildren) {
    const def = child?.type === 'decorated_definition' ? child.childForFieldName('definition') : child;
    if (!child || !def || (def.type !== 'function_definition' && def.type !== 'class_definition')) continue;
    const name = def.childForFieldName('name')?.text;
    if (!name || name.startsWith('_')) continue;
    const doc = docstring(def.childForFieldName('body'));
    symbols.push({
      name,
      kind: def.type === 'class_definition' ? 'class' : 'function',
      line: lineOf(child),
      endLine: endLineOf(child),
      summary: summarize(doc, def),
    });
  }
  const envVars = new Set<string>();
  for (const node of root.descendantsOfType(['call', 'subscript'])) {
    if (!node) continue;
    if (node.type === 'call') {
      const name = envCallArgument(node, ['os.getenv', 'os.environ.get', 'getenv', 'environ.get']);
      if (name) envVars.add(name);
    } else if (node.childForFieldName('value')?.text.replace(/^os\./, '') === 'environ') {
      const key = node.childForFieldName('subscript');
      if (key?.type === 'string') envVars.add(unquote(key.text));
    }
  }
  return { imports, symbols, doc: docstring(root), envVars: [...envVars].filter((v) => /^[A-Z_][A-Z0-9_]*$/.test(v)) };
}
