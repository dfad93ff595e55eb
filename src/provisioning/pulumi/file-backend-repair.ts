import { readdir, readFile, rm } from 'node:fs/promises';
import path from 'node:path';

/**
 * Pulumi's file:// backend writes each blob atomically (a temporary file, then a rename) but its
 * metadata file beside it (`<blob>.attrs`) in place: a process killed during that write leaves it
 * empty or cut short, and every later read of the stack fails ("failed to load checkpoint: EOF").
 * The metadata holds only a content type, and a missing file reads as the default, so a broken one
 * is removed. Covers the stack's checkpoint, history, backups and locks.
 */
export async function repairInterruptedWrites(stateDir: string, project: string, stack: string): Promise<string[]> {
  const root = path.join(stateDir, '.pulumi');
  const dirs = [
    path.join(root, 'stacks', project),
    path.join(root, 'history', project, stack),
    path.join(root, 'backups', project, stack),
    path.join(root, 'locks', 'organization', project, stack),
  ];
  const removed: string[] = [];
  for (const dir of dirs) {
    const names = await readdir(dir).catch(() => [] as string[]);
    for (const name of names) {
      if (!name.endsWith('.attrs') || (dir.endsWith(project) && !name.startsWith(`${stack}.`))) continue;
      const file = path.join(dir, name);
      if (await parses(file)) continue;
      await rm(file, { force: true });
      removed.push(file);
    }
  }
  return removed;
}

async function parses(file: string): Promise<boolean> {
  try {
    JSON.parse(await readFile(file, 'utf8'));
    return true;
  } catch {
    return false;
  }
}
