import type { PageNode } from '../page.ts';
import { MIN_MODULE_LINES } from '../plan.ts';
import { pageBuilder, type PageDraft, type WriteInput } from './context.ts';
import { code, plural, table } from './markdown.ts';

export function writeNumbers(input: WriteInput, page: PageNode): PageDraft {
  const { survey } = input;
  const b = pageBuilder(input, page);
  const h = survey.history;
  const out = ['# By the numbers'];
  out.push(
    table(
      ['Measure', 'Value'],
      [
        ['Files at this commit', survey.totals.files],
        ['Bytes', survey.totals.bytes],
        ['Source files', survey.totals.sourceFiles],
        ['Lines of code', survey.totals.lines],
        ['Public symbols', survey.totals.symbols],
        ['Directories with code', survey.modules.length],
        ['Import relations between directories', survey.edges.length],
        ['Workspace packages', survey.packages.length],
        ['Commits in history', h.totalCommits],
        ['Commits in the 90 days before this commit', h.commitsLast90Days],
      ],
    ),
  );
  out.push(
    '## Languages',
    table(
      ['Language', 'Files', 'Lines', 'Share'],
      survey.languages.map((l) => [l.name, l.files, l.lines, `${survey.totals.lines ? ((100 * l.lines) / survey.totals.lines).toFixed(1) : '0'}%`]),
    ),
  );
  out.push(
    '## Commit cadence',
    `Commits per week over the 12 weeks ending at this commit${h.firstCommitAt ? `; the history starts ${h.firstCommitAt.slice(0, 10)}` : ''}.`,
    table(
      ['Week of', 'Commits'],
      h.weeks.map((w) => [w.weekStart, w.commits]),
    ),
  );
  out.push(
    '## Churn hotspots',
    h.hotspots.length ? `Files with the most lines changed in the 90 days before this commit.` : 'No file changed in the 90 days before this commit.',
    table(
      ['File', 'Commits', 'Lines changed'],
      h.hotspots.map((x) => [survey.blobs.has(x.path) ? b.cite(x.path) : `${code(x.path)} (since removed)`, x.commits, x.linesChanged]),
    ),
  );
  const biggest = [...survey.modules].sort((a, b) => b.lines - a.lines).slice(0, 10);
  out.push(
    '## Largest directories',
    table(
      ['Directory', 'Files', 'Lines'],
      biggest.map((m) => [b.moduleLink(m.dir), m.files.length, m.lines]),
    ),
  );
  return b.finish(out.join('\n\n'));
}

export function writeLensSection(input: WriteInput, page: PageNode): PageDraft {
  const { survey, plan } = input;
  const b = pageBuilder(input, page);
  const out = [`# ${page.title}`];
  if (plan.lens.path === 'packages') {
    out.push(`The repository is a workspace of ${plural(survey.packages.length, 'package')}; each directory of code has a page, grouped here by package.`);
    out.push(
      table(
        ['Package', 'Directory', 'Kind', 'Description'],
        survey.packages.map((p) => [code(p.name ?? p.dir), b.cite(p.file), p.kind, p.description ?? '']),
      ),
    );
  } else
    out.push(
      `Every directory that holds source code, with a page each (directories under ${plural(MIN_MODULE_LINES, 'line')} are listed with the reason they have none).`,
    );
  const groups = new Map<string, typeof plan.modulePages>();
  for (const p of plan.modulePages) {
    const key = p.module.packageDir ?? '';
    groups.set(key, [...(groups.get(key) ?? []), p]);
  }
  for (const [pkgDir, pages] of [...groups].sort((a, b) => a[0].localeCompare(b[0]))) {
    const pkg = survey.packages.find((p) => p.dir === pkgDir);
    if (plan.lens.path === 'packages') out.push(`## ${pkg ? code(pkg.name ?? pkg.dir) : 'Outside the workspace packages'}`);
    out.push(
      table(
        ['Directory', 'Files', 'Lines', 'Purpose'],
        pages.map((p) => [
          b.link(p.id, p.module.dir || '(root)'),
          p.module.files.length,
          p.module.lines,
          p.module.doc?.split(/(?<=[.!?])\s/)[0] ?? `${p.module.files.reduce((s, f) => s + f.symbols.length, 0)} public symbols`,
        ]),
      ),
    );
  }
  if (plan.skipped.length)
    out.push('## Directories without a page', plan.skipped.map((s) => `- ${code(s.dir || '.')}: skipped because ${s.reason}.`).join('\n'));
  return b.finish(out.join('\n\n'));
}

export function writeReferenceSection(input: WriteInput, page: PageNode): PageDraft {
  const b = pageBuilder(input, page);
  const children = input.plan.pages.filter((p) => p.parentId === page.id);
  return b.finish(['# Reference', 'Facts to look up rather than read through.', children.map((c) => `- ${b.link(c.id)}`).join('\n')].join('\n\n'));
}

export function writeConfiguration(input: WriteInput, page: PageNode): PageDraft {
  const { survey } = input;
  const b = pageBuilder(input, page);
  const out = ['# Configuration'];
  if (survey.envVars.length) {
    out.push(
      `Environment variables the code reads by name (${survey.envVars.length}), found in the parsed sources.`,
      table(
        ['Variable', 'Read in'],
        survey.envVars.map((v) => [
          code(v.name),
          v.files
            .slice(0, 4)
            .map((f) => b.cite(f))
            .join(', ') + (v.files.length > 4 ? ` and ${v.files.length - 4} more` : ''),
        ]),
      ),
    );
  } else out.push('The parsed sources read no environment variable by name.');
  const configFiles = [...survey.blobs.keys()].filter(
    (f) =>
      /(^|\/)(\.env\.(example|sample|template)|config\.(ya?ml|json|toml)|settings\.(py|ya?ml)|application\.(properties|ya?ml))$/.test(f) &&
      !/node_modules/.test(f),
  );
  if (configFiles.length)
    out.push(
      '## Configuration files',
      configFiles
        .slice(0, 40)
        .map((f) => `- ${b.cite(f)}`)
        .join('\n'),
    );
  return b.finish(out.join('\n\n'));
}

export function writeDataModels(input: WriteInput, page: PageNode): PageDraft {
  const { survey } = input;
  const b = pageBuilder(input, page);
  const out = ['# Data models'];
  if (survey.dataModels.length)
    out.push(
      'Schemas the repository declares: Prisma models and enums, and SQL tables of its migrations.',
      table(
        ['Name', 'Kind', 'Declared in'],
        survey.dataModels.slice(0, 200).map((d) => [code(d.name), d.kind, b.cite(d.file, [d.line, d.line])]),
      ),
    );
  const records = survey.files.flatMap((f) =>
    f.symbols
      .filter((s) => /struct|record|interface|class/.test(s.kind) && /(^|\/)(models?|entities|schemas?|types|domain|dto)(\/|\.|$)/i.test(f.path))
      .map((s) => ({ s, f })),
  );
  if (records.length)
    out.push(
      '## Types in model directories',
      table(
        ['Type', 'Kind', 'Defined in', 'What it is'],
        records.slice(0, 100).map(({ s, f }) => [code(s.name), s.kind, b.cite(f.path, [s.line, s.endLine]), s.summary]),
      ),
    );
  if (!survey.dataModels.length && !records.length)
    out.push(
      'The repository declares no Prisma schema or SQL tables, and has no model, entity or schema directories; its data shapes are the types listed on each directory page.',
    );
  return b.finish(out.join('\n\n'));
}

export function writeDependencies(input: WriteInput, page: PageNode): PageDraft {
  const { survey } = input;
  const b = pageBuilder(input, page);
  const out = ['# Dependencies'];
  const usage = new Map<string, number>();
  for (const m of survey.modules) for (const [name, n] of m.externals) usage.set(name, (usage.get(name) ?? 0) + n);
  const withDeps = survey.manifests.filter((m) => m.dependencies.length);
  if (!withDeps.length) out.push('No manifest declares dependencies.');
  for (const m of withDeps) {
    out.push(
      `## ${code(m.name ?? m.file)} (${m.kind})`,
      `Declared in ${b.cite(m.file)}.`,
      table(
        ['Package', 'Version', 'Kind', 'Imports in the code'],
        m.dependencies.slice(0, 150).map((d) => [code(d.name), code(d.version), d.dev ? 'development' : 'runtime', usage.get(d.name) ?? 0]),
      ),
    );
  }
  const undeclared = [...usage]
    .filter(
      ([name]) =>
        name !== 'node' && name !== 'std' && !survey.manifests.some((m) => m.dependencies.some((d) => d.name === name || d.name.endsWith(`/${name}`))),
    )
    .sort((a, b) => b[1] - a[1])
    .slice(0, 30);
  if (undeclared.length)
    out.push(
      '## Imported but not declared',
      'Packages the code imports that no manifest lists (standard libraries of Python, Go and Java, or undeclared dependencies).',
      table(
        ['Package', 'Imports'],
        undeclared.map(([n, c]) => [code(n), c]),
      ),
    );
  return b.finish(out.join('\n\n'));
}
