import type { ModulePage } from '../plan.ts';
import { pageBuilder, type PageDraft, type WriteInput } from './context.ts';
import { code, importGraph, plural, table } from './markdown.ts';

const MAX_SYMBOLS = 40;
const MAX_FILES = 40;
const MAX_GRAPH_NODES = 15;

/**
 * A page about one source directory, complete from the survey: purpose, layout, key
 * abstractions, its real import graph with neighbours, key files and cross-links. It cites the
 * directory's files and the files that import it, so it is reused only when none of those changed.
 */
export function writeModulePage(input: WriteInput, page: ModulePage): PageDraft {
  const b = pageBuilder(input, page);
  const m = page.module;
  const pkg = m.packageDir !== null ? input.survey.packages.find((p) => p.dir === m.packageDir) : undefined;
  const out: string[] = [`# ${m.dir || '(repository root)'}`];

  const langs = Object.entries(m.languages)
    .sort((a, b) => b[1] - a[1])
    .map(([l, n]) => `${l} (${n.toLocaleString('en-US')} lines)`)
    .join(', ');
  out.push(
    m.doc
      ? `${m.doc}`
      : `${code(m.dir || '.')} holds ${plural(m.files.length, 'source file')} of ${langs} defining ${plural(
          m.files.reduce((s, f) => s + f.symbols.length, 0),
          'public symbol',
        )}; no README or doc comment in it says more.`,
  );
  out.push(
    `It has ${plural(m.files.length, 'file')} and ${plural(m.lines, 'line')}` +
      (pkg ? `, in the package ${code(pkg.name ?? pkg.dir)} (${b.cite(pkg.file)})` : '') +
      '.',
  );

  out.push(
    '## Directory layout',
    table(
      ['File', 'Lines', 'Public symbols'],
      [...m.files]
        .sort((a, b) => a.path.localeCompare(b.path))
        .slice(0, MAX_FILES)
        .map((f) => [b.cite(f.path), f.lines, f.symbols.length]),
    ),
  );
  if (m.files.length > MAX_FILES) out.push(`The ${m.files.length - MAX_FILES} further files are smaller.`);

  const symbols = m.files.flatMap((f) => f.symbols.map((s) => ({ ...s, file: f.path })));
  out.push('## Key abstractions');
  if (symbols.length) {
    const ranked = [...symbols].sort(
      (a, b) =>
        Number(/class|interface|struct|trait|type|enum|record/.test(b.kind)) - Number(/class|interface|struct|trait|type|enum|record/.test(a.kind)) ||
        b.endLine - b.line - (a.endLine - a.line),
    );
    out.push(
      table(
        ['Symbol', 'Kind', 'Defined in', 'What it is'],
        ranked.slice(0, MAX_SYMBOLS).map((s) => [code(s.name), s.kind, b.cite(s.file, [s.line, s.endLine]), s.summary]),
      ),
    );
    if (symbols.length > MAX_SYMBOLS)
      out.push(`${symbols.length - MAX_SYMBOLS} more public symbols are defined here; the table lists the types first, then the largest definitions.`);
  } else
    out.push(
      `No file here exports a public symbol: the code is ${m.files.some((f) => /test|spec/.test(f.path)) ? 'tests and their helpers' : 'scripts or internal code'} that other code does not import by name.`,
    );

  out.push('## Import graph');
  const neighbours = [...new Map([...m.imports, ...m.importedBy]).entries()]
    .map(([dir]) => ({ dir, weight: (m.imports.get(dir) ?? 0) + (m.importedBy.get(dir) ?? 0) }))
    .sort((a, b) => b.weight - a.weight || a.dir.localeCompare(b.dir))
    .slice(0, MAX_GRAPH_NODES - 1);
  if (neighbours.length) {
    const nodes = [m.dir, ...neighbours.map((n) => n.dir)];
    const edges = [
      ...[...m.imports].map(([to, count]) => ({ from: m.dir, to, count })),
      ...[...m.importedBy].map(([from, count]) => ({ from, to: m.dir, count })),
    ];
    out.push(`Edges are import statements between directories, counted from the parsed sources.`, importGraph(nodes, edges, m.dir));
  } else out.push(`${code(m.dir || '.')} imports no other directory of the repository, and none imports it.`);

  if (m.imports.size) {
    out.push(
      '### Depends on',
      [...m.imports]
        .sort((a, b) => b[1] - a[1])
        .map(([dir, n]) => `- ${b.moduleLink(dir)}: ${plural(n, 'import')}`)
        .join('\n'),
    );
  }
  if (m.importedBy.size) {
    const importers = input.survey.files.filter((f) => m.importedBy.has(f.module));
    for (const f of importers) b.cite(f.path);
    out.push(
      '### Used by',
      [...m.importedBy]
        .sort((a, b) => b[1] - a[1])
        .map(([dir, n]) => `- ${b.moduleLink(dir)}: ${plural(n, 'import')}`)
        .join('\n'),
    );
  }
  if (m.externals.size) {
    out.push(
      '### External packages',
      [...m.externals]
        .sort((a, b) => b[1] - a[1])
        .slice(0, 20)
        .map(([name, n]) => `${code(name)} (${n})`)
        .join(', '),
    );
  }

  const key = [...m.files].sort((a, b) => b.symbols.length - a.symbols.length || b.lines - a.lines).slice(0, 10);
  out.push(
    '## Key source files',
    table(
      ['File', 'Lines', 'What it holds'],
      key.map((f) => [
        b.cite(f.path),
        f.lines,
        f.doc?.split('\n')[0] ??
          (f.symbols.length
            ? f.symbols
                .slice(0, 5)
                .map((s) => s.name)
                .join(', ')
            : f.unparsed
              ? `not parsed: ${f.unparsed}`
              : 'no public symbols'),
      ]),
    ),
  );
  out.push(
    '## See also',
    `- ${b.link(input.plan.lens.id)}: every directory of the code`,
    `- ${b.link('overview.architecture')}: how the directories fit together`,
  );
  const defined = symbols.flatMap((s) => [s.name.toLowerCase(), ...(s.name.includes('.') ? [s.name.split('.').pop()!.toLowerCase()] : [])]);
  return b.finish(out.join('\n\n'), [...new Set(defined)]);
}
