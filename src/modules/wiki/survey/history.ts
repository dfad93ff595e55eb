import type { GitRepo } from './git-repo.ts';

/** How the repository changes: commit cadence and the files that churn. No per-person figures. */
export interface History {
  totalCommits: number;
  firstCommitAt: string | null;
  /** Commits per week for the 12 weeks ending at the documented commit, oldest first. */
  weeks: { weekStart: string; commits: number }[];
  commitsLast90Days: number;
  /** Files with the most lines changed in the 90 days before the documented commit. */
  hotspots: { path: string; commits: number; linesChanged: number }[];
}

const DAY = 86_400_000;
const MAX_COMMITS = 50_000;

/** Read from the commit being documented backwards, so a wiki of an old commit describes its own time. */
export async function readHistory(repo: GitRepo, headAt: Date, signal?: AbortSignal): Promise<History> {
  const times = (await repo.git(['log', `--max-count=${MAX_COMMITS}`, '--format=%ct', 'HEAD'], signal))
    .split('\n')
    .filter(Boolean)
    .map((t) => Number(t) * 1000);
  const end = headAt.getTime();
  const weeks = Array.from({ length: 12 }, (_, i) => {
    const start = end - (12 - i) * 7 * DAY;
    return { weekStart: new Date(start).toISOString().slice(0, 10), commits: times.filter((t) => t > start && t <= start + 7 * DAY).length };
  });
  const since = Math.floor((end - 90 * DAY) / 1000);
  const log = await repo.git(['log', `--since=@${since}`, '--numstat', '--format=%x00', '--no-renames', 'HEAD'], signal);
  const files = new Map<string, { commits: number; linesChanged: number }>();
  const chunks = log.split('\0').slice(1);
  for (const chunk of chunks) {
    for (const line of chunk.split('\n')) {
      const [added, deleted, file] = line.split('\t');
      // Lockfiles churn with every dependency bump and say nothing about the code.
      if (!file || added === '-' || /(^|\/)[^/]*lock[^/]*$|\.lock$/i.test(file)) continue;
      const entry = files.get(file) ?? { commits: 0, linesChanged: 0 };
      entry.commits++;
      entry.linesChanged += Number(added) + Number(deleted);
      files.set(file, entry);
    }
  }
  return {
    totalCommits: times.length,
    firstCommitAt: times.length ? new Date(times[times.length - 1]!).toISOString() : null,
    weeks,
    commitsLast90Days: chunks.length,
    hotspots: [...files.entries()]
      .map(([path, v]) => ({ path, ...v }))
      .sort((a, b) => b.linesChanged - a.linesChanged || a.path.localeCompare(b.path))
      .slice(0, 15),
  };
}
