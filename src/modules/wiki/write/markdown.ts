/** Small Markdown builders shared by the page writers. */

function cell(value: string | number): string {
  return String(value).replace(/\|/g, '\\|').replace(/\n+/g, ' ');
}

export function table(headers: string[], rows: (string | number)[][]): string {
  if (!rows.length) return '';
  return [`| ${headers.join(' | ')} |`, `|${headers.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${r.map(cell).join(' | ')} |`)].join('\n');
}

export const code = (text: string) => `\`${text.replace(/`/g, "'")}\``;

export const plural = (n: number, one: string, many = `${one}s`) => `${n.toLocaleString('en-US')} ${n === 1 ? one : many}`;

const mermaidId = (i: number) => `n${i}`;
const mermaidLabel = (text: string) => text.replace(/["<>]/g, "'").replace(/[[\]{}()]/g, ' ') || '/';

/**
 * A Mermaid flowchart of an import graph: nodes are module directories (or files), edges say how
 * many import statements lead from one to the other. `focus` is drawn as the highlighted node.
 */
export function importGraph(nodes: string[], edges: { from: string; to: string; count: number }[], focus?: string): string {
  const ids = new Map(nodes.map((n, i) => [n, mermaidId(i)]));
  const lines = ['```mermaid', 'flowchart LR'];
  for (const n of nodes) lines.push(`  ${ids.get(n)}["${mermaidLabel(n || '(root)')}"]`);
  for (const e of edges) {
    if (!ids.has(e.from) || !ids.has(e.to)) continue;
    lines.push(`  ${ids.get(e.from)} -->|"${plural(e.count, 'import')}"| ${ids.get(e.to)}`);
  }
  if (focus !== undefined && ids.has(focus)) lines.push(`  style ${ids.get(focus)} stroke-width:3px`);
  lines.push('```');
  return lines.join('\n');
}
