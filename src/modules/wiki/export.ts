import { Readable, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import yazl from 'yazl';
import type { PrismaClient } from '../../db/client.ts';
import { exportFiles, treeOrder, type WikiMeta } from './assemble.ts';

/** Pages fetched from the database at once while zipping: memory stays flat whatever the run's size. */
const BATCH = 20;

type PageRef = { id: string; path: string; title: string; parentId: string | null; position: number };

function indexMarkdown(title: string, pages: PageRef[], files: Map<string, string>): string {
  const lines = [`# ${title}`, ''];
  for (const p of pages) lines.push(`${p.parentId ? '  ' : ''}- [${p.title}](${files.get(p.id)})`);
  return `${lines.join('\n')}\n`;
}

/**
 * Streams a run as a zip: each page as Markdown where the tree puts it (a page with children is
 * its folder's index.md), `index.md` with the whole tree, and `.wiki-meta.json`. Page bodies are
 * read from the database in small batches only as the zip writer reaches them.
 */
export async function streamExport(
  db: Pick<PrismaClient, 'wikiPage'>,
  run: { id: string; repoUrl: string; commitHash: string | null; meta: unknown },
  out: Writable,
): Promise<void> {
  const refs = treeOrder(
    await db.wikiPage.findMany({ where: { runId: run.id }, select: { id: true, path: true, title: true, parentId: true, position: true } }),
  );
  const files = exportFiles(refs);
  const zip = new yazl.ZipFile();
  const meta = (run.meta ?? {}) as Partial<WikiMeta>;
  const wikiMeta: WikiMeta = {
    generatedAt: meta.generatedAt ?? new Date(0).toISOString(),
    pageCount: refs.length,
    topLevelSections: refs.filter((p) => !p.parentId).map((p) => p.path),
    pageOrder: refs.map((p) => p.path),
  };
  const title = `Wiki of ${run.repoUrl}${run.commitHash ? ` at ${run.commitHash.slice(0, 12)}` : ''}`;
  zip.addBuffer(Buffer.from(indexMarkdown(title, refs, files)), 'index.md');
  zip.addBuffer(Buffer.from(`${JSON.stringify(wikiMeta, null, 2)}\n`), '.wiki-meta.json');

  const loaded = new Map<string, string>();
  const load = async (from: number) => {
    const ids = refs.slice(from, from + BATCH).map((p) => p.id);
    const rows = await db.wikiPage.findMany({ where: { runId: run.id, id: { in: ids } }, select: { id: true, markdown: true } });
    for (const r of rows) loaded.set(r.id, r.markdown);
  };
  refs.forEach((page, i) => {
    const body = new Readable({
      read() {
        const emit = () => {
          const markdown = loaded.get(page.id) ?? '';
          loaded.delete(page.id);
          this.push(Buffer.from(markdown));
          this.push(null);
        };
        if (loaded.has(page.id)) emit();
        else load(i).then(emit, (err: Error) => this.destroy(err));
      },
    });
    zip.addReadStream(body, files.get(page.id)!);
  });
  zip.end();
  await pipeline(zip.outputStream, out);
}
