import fs from 'node:fs/promises';
import path from 'node:path';

const YAML_FILE = /\.ya?ml$/i;

/** A YAML file, or every YAML file under a directory (sorted), with the path as given so errors name it. */
export async function readConfigFiles(target: string): Promise<{ path: string; content: string }[]> {
  const stat = await fs.stat(target).catch(() => undefined);
  if (!stat) throw new Error(`${target}: no such file or directory`);
  const paths = stat.isDirectory()
    ? (await fs.readdir(target, { recursive: true, withFileTypes: true }))
        .filter((e) => e.isFile() && YAML_FILE.test(e.name))
        .map((e) => path.join(e.parentPath, e.name))
        .sort()
    : [target];
  if (paths.length === 0) throw new Error(`${target} holds no .yaml or .yml files`);
  return Promise.all(paths.map(async (p) => ({ path: path.relative(process.cwd(), p) || p, content: await fs.readFile(p, 'utf8') })));
}
