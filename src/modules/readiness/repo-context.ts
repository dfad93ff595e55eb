import path from 'node:path/posix';
import type { App } from './apps.ts';
import { shellQuote } from '../../provisioning/ssh/index.ts';
import type { RepoWorkspace } from '../../repos/workspace.ts';

/** Text files larger than this are not read: no criterion needs one. */
const MAX_TEXT_BYTES = 1024 * 1024;

interface GrepMatch {
  path: string;
  line: number;
  text: string;
}

/**
 * What criteria see of a checked-out repository: its file list (paths relative to the checkout,
 * `/`-separated), cached text reads, a `git grep`, and the detected applications.
 */
export interface RepoContext {
  readonly files: readonly string[];
  readonly apps: readonly App[];
  has(file: string): boolean;
  /** Text of a file; undefined when absent, binary or larger than 1 MiB. */
  read(file: string): Promise<string | undefined>;
  /** Parsed JSON of a file; undefined when absent or not JSON. */
  json(file: string): Promise<unknown>;
  /** Lines of tracked text files matching any of the extended regular expressions. */
  grep(patterns: string[]): Promise<GrepMatch[]>;
}

/** Files of `dir` (`.` for the root), relative to the checkout. */
export function filesUnder(files: readonly string[], dir: string): string[] {
  if (dir === '.') return [...files];
  return files.filter((f) => f.startsWith(`${dir}/`));
}

/** `dir` and each directory above it, up to the root (`.`). */
export function selfAndAncestors(dir: string): string[] {
  const out: string[] = [];
  let current = dir;
  while (current !== '.' && current !== '/' && current !== '') {
    out.push(current);
    current = path.dirname(current);
  }
  out.push('.');
  return out;
}

export function join(dir: string, file: string): string {
  return dir === '.' ? file : `${dir}/${file}`;
}

export type BaseContext = Omit<RepoContext, 'apps'>;

/** The context of the checkout at `checkoutDir` of `workspace`; `apps` are added by the caller. */
export async function openRepoContext(workspace: RepoWorkspace, checkoutDir: string, signal?: AbortSignal): Promise<BaseContext> {
  const files = await workspace.listFiles(checkoutDir, { signal });
  const set = new Set(files);
  const cache = new Map<string, Promise<string | undefined>>();
  const read = (file: string) => {
    let text = cache.get(file);
    if (!text) {
      text = set.has(file)
        ? workspace.readFile(join(checkoutDir, file), { signal }).then((buf) => {
            if (!buf || buf.length > MAX_TEXT_BYTES || buf.includes(0)) return undefined;
            return buf.toString('utf8');
          })
        : Promise.resolve(undefined);
      cache.set(file, text);
    }
    return text;
  };
  return {
    files,
    has: (file) => set.has(file),
    read,
    async json(file) {
      const text = await read(file);
      if (text === undefined) return undefined;
      try {
        return JSON.parse(text) as unknown;
      } catch {
        return undefined;
      }
    },
    async grep(patterns) {
      const args = patterns.map((p) => `-e ${shellQuote(p)}`).join(' ');
      // -I skips binary files; -z separates path, line and text with NUL so any name survives.
      const res = await workspace.exec(`git grep --untracked -I -n -z -E ${args}`, { cwd: checkoutDir, signal });
      if (res.exitCode === 1) return [];
      if (res.exitCode !== 0) throw new Error(`git grep failed: ${res.stderr.trim()}`);
      return res.stdout
        .split('\n')
        .filter(Boolean)
        .map((row) => {
          const [file, line, ...text] = row.split('\0');
          return { path: file!, line: Number(line), text: text.join('\0') };
        });
    },
  };
}
