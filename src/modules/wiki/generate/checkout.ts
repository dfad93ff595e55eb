import fs from 'node:fs/promises';
import path from 'node:path';
import type { GitRepo } from '../survey/git-repo.ts';
import { isIgnoredPath } from '../survey/languages.ts';

const MAX_FILE_BYTES = 1024 * 1024;
const BATCH = 500;

/**
 * Writes the commit's regular files (not vendored, at most 1 MB each) into `dir` for the model's
 * read-only tools. Only blobs are written: symlinks are left out, so no path inside `dir` leads
 * out of it, and nothing is checked out by git (no filters, no hooks).
 */
export async function writeCheckout(repo: GitRepo, dir: string, signal?: AbortSignal): Promise<void> {
  const entries = (await repo.tree(signal)).filter((e) => e.size <= MAX_FILE_BYTES && !isIgnoredPath(e.path));
  for (let i = 0; i < entries.length; i += BATCH) {
    const batch = entries.slice(i, i + BATCH);
    const blobs = await repo.readBlobs(
      batch.map((e) => e.sha),
      signal,
    );
    for (const e of batch) {
      const file = path.join(dir, e.path);
      if (!file.startsWith(dir + path.sep)) continue;
      await fs.mkdir(path.dirname(file), { recursive: true });
      await fs.writeFile(file, blobs.get(e.sha) ?? Buffer.alloc(0));
    }
  }
}
