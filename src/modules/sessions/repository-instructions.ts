import { shellQuote, type SshClient, type SshTarget } from '../../ssh/index.ts';

/** All AGENTS.md files of a turn together, at most (the bound Codex uses for the same files). */
export const MAX_INSTRUCTIONS_BYTES = 32 * 1024;
const READ_TIMEOUT_MS = 15_000;

export interface InstructionsFile {
  path: string;
  text: string;
  /** The file was longer than its share of the bound and was cut. */
  truncated: boolean;
}

/**
 * Walks up from $1 to the repository root (the nearest directory holding `.git`; without one,
 * only $1 itself) and prints every AGENTS.md on the way, nearest first, each as RS path US text,
 * at most $2 bytes of each. Separators are control characters a path or a Markdown file does not hold.
 * The parent directory is cut from the path by the shell itself (`up`), not by `dirname`: a turn
 * reads these files every time, and each `$(dirname ...)` was a fork and an exec on the computer.
 */
const SCRIPT = `up() { case $d in /) ;; /*/*) d=\${d%/*} ;; *) d=/ ;; esac; }
d=$1; while [ "$d" != / ] && [ "\${d%/}" != "$d" ]; do d=\${d%/}; done; start=$d; root=$d
while :; do if [ -e "$d/.git" ]; then root=$d; break; fi; [ "$d" = / ] && break; up; done
d=$start
while :; do
  if [ -f "$d/AGENTS.md" ] && [ -r "$d/AGENTS.md" ]; then printf '\\036%s\\037' "$d/AGENTS.md"; head -c "$2" -- "$d/AGENTS.md"; fi
  if [ "$d" = "$root" ] || [ "$d" = / ]; then break; fi
  up
done`;

/**
 * The AGENTS.md files that apply in `cwd`, root first (the order they are read in, general to
 * specific), read fresh, so a change is seen by the next turn. Nearer files get the bound first:
 * they speak about the code the agent works on. A computer that cannot be read gives none;
 * the turn's tools will report the same problem where it matters.
 */
export async function readRepositoryInstructions(ssh: SshClient, target: SshTarget, cwd: string, signal?: AbortSignal): Promise<InstructionsFile[]> {
  let stdout: string;
  try {
    const res = await ssh.exec(target, `sh -c ${shellQuote(SCRIPT)} agents ${shellQuote(cwd)} ${MAX_INSTRUCTIONS_BYTES + 1}`, {
      signal,
      timeoutMs: READ_TIMEOUT_MS,
      maxOutputBytes: 8 * (MAX_INSTRUCTIONS_BYTES + 1),
    });
    if (res.exitCode !== 0) return [];
    stdout = res.stdout;
  } catch {
    return [];
  }
  let left = MAX_INSTRUCTIONS_BYTES;
  const files: InstructionsFile[] = [];
  for (const part of stdout.split('\x1e').slice(1)) {
    const sep = part.indexOf('\x1f');
    if (sep === -1) continue;
    const raw = Buffer.from(part.slice(sep + 1), 'utf8');
    const kept = raw.subarray(0, Math.max(0, left));
    left -= kept.length;
    if (kept.length === 0) break;
    files.push({ path: part.slice(0, sep), text: kept.toString('utf8'), truncated: kept.length < raw.length });
  }
  return files.reverse();
}

/** The instructions section of the system prompt, or '' when there are none. */
export function instructionsSection(files: readonly InstructionsFile[]): string {
  if (files.length === 0) return '';
  const parts = files.map(
    (f) => `## ${f.path}\n${f.text.trimEnd()}${f.truncated ? `\n[${f.path} was cut at the ${MAX_INSTRUCTIONS_BYTES}-byte bound for instructions]` : ''}`,
  );
  return [
    'Repository instructions (AGENTS.md files, from the repository root down to the working directory; where they disagree, the deeper file wins):',
    ...parts,
  ].join('\n\n');
}
