import type { PageNode } from '../page.ts';
import { firstParagraph } from '../survey/survey.ts';
import { pageBuilder, type PageDraft, type WriteInput } from './context.ts';
import { code, importGraph, plural, table } from './markdown.ts';

const ARCHITECTURE_NODES = 12;
/** Fewer connected directories than this, and the architecture diagram is drawn by files (up to ARCHITECTURE_NODES). */
const MIN_GRAPH_NODES = 5;

type Edge = { from: string; to: string; count: number };

/** The most connected nodes of an import graph (by imports in and out) and the edges among them. */
function mostConnected(edges: Edge[]): { nodes: string[]; edges: Edge[] } {
  const degree = new Map<string, number>();
  for (const e of edges) {
    degree.set(e.from, (degree.get(e.from) ?? 0) + e.count);
    degree.set(e.to, (degree.get(e.to) ?? 0) + e.count);
  }
  const nodes = [...degree.entries()]
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .slice(0, ARCHITECTURE_NODES)
    .map(([n]) => n);
  const kept = new Set(nodes);
  return { nodes, edges: edges.filter((e) => kept.has(e.from) && kept.has(e.to)) };
}

export function writeOverview(input: WriteInput, page: PageNode): PageDraft {
  const { survey, plan, repo } = input;
  const b = pageBuilder(input, page);
  const readme = survey.readmes.get('');
  const rootManifest = survey.manifests.find((m) => m.dir === '' && m.description);
  const purpose = (readme && firstParagraph(readme)) ?? rootManifest?.description;
  const out = [`# ${repo.name}`];
  if (purpose)
    out.push(`${purpose}`, `(From ${b.cite(readme ? ([...survey.blobs.keys()].find((k) => /^readme/i.test(k)) ?? 'README.md') : rootManifest!.file)}.)`);
  else out.push(`${repo.name} has no README at its root; this page is drawn from its code alone.`);
  const top = survey.languages
    .slice(0, 4)
    .map((l) => `${l.name} (${l.lines.toLocaleString('en-US')} lines)`)
    .join(', ');
  out.push(
    `This wiki documents ${code(repo.url)}${repo.branch ? ` on ${code(repo.branch)}` : ''} at commit ${code(survey.headCommit.slice(0, 12))}: ` +
      `${plural(survey.totals.sourceFiles, 'source file')} and ${plural(survey.totals.lines, 'line')} of code, mostly ${top || 'no recognised language'}, ` +
      `in ${plural(survey.modules.length, 'directory', 'directories')}${survey.packages.length ? ` across ${plural(survey.packages.length, 'workspace package')}` : ''}.`,
  );
  if (survey.entryPoints.length) out.push('## Entry points', survey.entryPoints.map((e) => `- ${b.cite(e)}`).join('\n'));
  out.push(
    '## Sections',
    plan.pages
      .filter((p) => p.parentId === null && p.id !== page.id)
      .map((p) => `- ${b.link(p.id)}${plan.hasChildren(p.id) ? `: ${plan.pages.filter((c) => c.parentId === p.id).length} pages` : ''}`)
      .join('\n'),
    plan.pages
      .filter((p) => p.parentId === page.id)
      .map((p) => `- ${b.link(p.id)}`)
      .join('\n'),
  );
  return b.finish(out.join('\n\n'));
}

export function writeArchitecture(input: WriteInput, page: PageNode): PageDraft {
  const { survey } = input;
  const b = pageBuilder(input, page);
  // Directories make the clearer picture; a repository with few of them is drawn by its files, so
  // the diagram has enough labelled nodes to say something.
  const byDirectory = mostConnected(survey.edges);
  const byFile = byDirectory.nodes.length < MIN_GRAPH_NODES ? mostConnected(survey.fileEdges) : undefined;
  const graph = byFile && byFile.nodes.length > byDirectory.nodes.length ? byFile : byDirectory;
  const unit = graph === byDirectory ? 'directory' : 'file';
  const out = ['# Architecture'];
  out.push(
    `The code is organised in ${plural(survey.modules.length, 'directory', 'directories')} with ${plural(survey.edges.length, 'import relation')} between them.` +
      (graph.nodes.length
        ? ` The diagram shows the ${graph.nodes.length} most connected ${unit === 'directory' ? 'directories' : 'files'}; each edge counts the import statements from one ${unit} into the other.`
        : ' No directory imports another, so there is no graph to draw.'),
  );
  if (graph.nodes.length) out.push(importGraph(graph.nodes, graph.edges));
  const mostUsed = [...survey.modules]
    .sort((a, b) => b.importedBy.size - a.importedBy.size)
    .filter((m) => m.importedBy.size)
    .slice(0, 8);
  if (mostUsed.length) {
    out.push(
      '## Foundations',
      'Directories many others import: changes here reach furthest.',
      table(
        ['Directory', 'Imported by', 'Lines'],
        mostUsed.map((m) => [b.moduleLink(m.dir), plural(m.importedBy.size, 'directory', 'directories'), m.lines]),
      ),
    );
  }
  const leaves = [...survey.modules]
    .filter((m) => m.imports.size && !m.importedBy.size)
    .sort((a, b) => b.imports.size - a.imports.size)
    .slice(0, 8);
  if (leaves.length) {
    out.push(
      '## Top of the stack',
      'Directories nothing else imports: entry points, commands and tests that put the rest together.',
      table(
        ['Directory', 'Imports from', 'Lines'],
        leaves.map((m) => [b.moduleLink(m.dir), plural(m.imports.size, 'directory', 'directories'), m.lines]),
      ),
    );
  }
  if (survey.entryPoints.length) out.push('## Where execution starts', survey.entryPoints.map((e) => `- ${b.cite(e)}`).join('\n'));
  return b.finish(out.join('\n\n'));
}

export function writeGettingStarted(input: WriteInput, page: PageNode): PageDraft {
  const { survey, repo } = input;
  const b = pageBuilder(input, page);
  const out = ['# Getting started', '## Get the code', '```sh', `git clone ${repo.url}${repo.branch ? ` --branch ${repo.branch}` : ''}`, '```'];
  const kinds = new Set(survey.manifests.map((m) => m.kind));
  const steps: string[] = [];
  if (kinds.has('npm')) steps.push(`- JavaScript/TypeScript: \`npm install\` (${b.cite(survey.manifests.find((m) => m.kind === 'npm')!.file)})`);
  if (kinds.has('python'))
    steps.push(`- Python: \`pip install -e .\` or \`pip install -r requirements.txt\` (${b.cite(survey.manifests.find((m) => m.kind === 'python')!.file)})`);
  if (kinds.has('go')) steps.push(`- Go: \`go build ./...\` (${b.cite(survey.manifests.find((m) => m.kind === 'go')!.file)})`);
  if (kinds.has('cargo')) steps.push(`- Rust: \`cargo build\` (${b.cite(survey.manifests.find((m) => m.kind === 'cargo')!.file)})`);
  if (kinds.has('maven')) steps.push(`- Java: \`mvn package\` (${b.cite(survey.manifests.find((m) => m.kind === 'maven')!.file)})`);
  if (kinds.has('gradle')) steps.push(`- Java/Kotlin: \`gradle build\` (${b.cite(survey.manifests.find((m) => m.kind === 'gradle')!.file)})`);
  out.push(
    '## Install and build',
    steps.length ? steps.join('\n') : 'No package manifest was found; the build is described by the files under "Build and CI" below, if any.',
  );
  const scripted = survey.manifests.filter((m) => Object.keys(m.scripts).length);
  for (const m of scripted.slice(0, 6)) {
    out.push(
      `### Commands of ${code(m.name ?? m.file)}`,
      table(
        ['Command', 'Runs'],
        Object.entries(m.scripts)
          .slice(0, 25)
          .map(([k, v]) => [code(m.kind === 'npm' ? `npm run ${k}` : k), code(v)]),
      ),
      `From ${b.cite(m.file)}.`,
    );
  }
  const builds = survey.builds.filter((c) => c.names.length);
  if (builds.length)
    out.push(
      '## Build and CI',
      table(
        ['File', 'Kind', 'Defines'],
        builds.map((c) => [b.cite(c.file), c.kind, c.names.join(', ')]),
      ),
    );
  if (survey.entryPoints.length) out.push('## Where to start reading', survey.entryPoints.map((e) => `- ${b.cite(e)}`).join('\n'));
  out.push(`Configuration the code reads is listed in ${b.link('reference.configuration')}.`);
  return b.finish(out.join('\n\n'));
}

export function writeGlossary(input: WriteInput, page: PageNode): PageDraft {
  const { survey, plan } = input;
  const b = pageBuilder(input, page);
  const types = survey.files
    .flatMap((f) => f.symbols.filter((s) => /class|interface|struct|trait|enum|record|type/.test(s.kind)).map((s) => ({ ...s, file: f })))
    .filter((s) => plan.moduleIdOf(s.file.module));
  const chosen = [...new Map(types.map((t) => [t.name, t])).values()].sort((a, b) => a.name.localeCompare(b.name)).slice(0, 150);
  const out = [
    '# Glossary',
    `The types the code defines publicly (${plural(chosen.length, 'term')}), each with where it is defined and the page that describes its directory.`,
  ];
  out.push(
    table(
      ['Term', 'Kind', 'Meaning', 'Defined in', 'Page'],
      chosen.map((t) => [code(t.name), t.kind, t.summary, b.cite(t.file.path, [t.line, t.endLine]), b.moduleLink(t.file.module)]),
    ),
  );
  if (!chosen.length) out.push('The code defines no public types: its vocabulary is functions, listed on each directory page.');
  return b.finish(out.join('\n\n'));
}
