import path from 'node:path/posix';
import { z } from 'zod';

const packageManagers = ['npm', 'pnpm', 'yarn', 'bun', 'pip', 'uv', 'poetry', 'go', 'cargo', 'bundler', 'composer'] as const;

/** One install to run: a zod schema so a job payload carrying a plan is validated like any other. */
export const installPlanSchema = z.object({
  manager: z.enum(packageManagers),
  /** Where to run `command` on the machine. */
  directory: z.string().min(1),
  command: z.string().min(1),
  /** The program that must be on the machine's PATH for `command` to work. */
  tool: z.string().min(1),
  /** The file that chose this plan, relative to the repository. */
  manifest: z.string().min(1),
});
export type InstallPlan = z.infer<typeof installPlanSchema>;
type PackageManager = InstallPlan['manager'];

interface Rule {
  /** Every file must be present in the directory. */
  files: string[];
  manager: PackageManager;
  command: string;
  tool: string;
}

/**
 * Per ecosystem, the first rule whose files are all present wins: a lockfile says exactly which
 * manager made it, a bare manifest only which ecosystem. Lockfile installs never rewrite the
 * lockfile (frozen/immutable/ci), so the clone's working tree stays clean. When a directory has
 * lockfiles of two JavaScript managers, pnpm, yarn, bun and npm win in that order.
 */
const ECOSYSTEMS: Record<string, Rule[]> = {
  javascript: [
    { files: ['pnpm-lock.yaml'], manager: 'pnpm', command: 'pnpm install --frozen-lockfile', tool: 'pnpm' },
    // Yarn 2+ ("berry") projects carry .yarnrc.yml and renamed --frozen-lockfile to --immutable.
    { files: ['yarn.lock', '.yarnrc.yml'], manager: 'yarn', command: 'yarn install --immutable', tool: 'yarn' },
    { files: ['yarn.lock'], manager: 'yarn', command: 'yarn install --frozen-lockfile', tool: 'yarn' },
    { files: ['bun.lock'], manager: 'bun', command: 'bun install', tool: 'bun' },
    { files: ['bun.lockb'], manager: 'bun', command: 'bun install', tool: 'bun' },
    { files: ['package-lock.json'], manager: 'npm', command: 'npm ci', tool: 'npm' },
    { files: ['npm-shrinkwrap.json'], manager: 'npm', command: 'npm ci', tool: 'npm' },
    { files: ['package.json'], manager: 'npm', command: 'npm install', tool: 'npm' },
  ],
  python: [
    { files: ['uv.lock'], manager: 'uv', command: 'uv sync', tool: 'uv' },
    { files: ['poetry.lock'], manager: 'poetry', command: 'poetry install', tool: 'poetry' },
    // A virtualenv per project: installing into the system Python needs root and, on Debian and
    // Ubuntu, is refused outright (PEP 668).
    {
      files: ['requirements.txt'],
      manager: 'pip',
      command: 'python3 -m venv .venv && .venv/bin/pip install -r requirements.txt',
      tool: 'python3',
    },
    { files: ['pyproject.toml'], manager: 'pip', command: 'python3 -m venv .venv && .venv/bin/pip install -e .', tool: 'python3' },
  ],
  go: [{ files: ['go.mod'], manager: 'go', command: 'go mod download', tool: 'go' }],
  rust: [{ files: ['Cargo.toml'], manager: 'cargo', command: 'cargo fetch', tool: 'cargo' }],
  ruby: [{ files: ['Gemfile'], manager: 'bundler', command: 'bundle install', tool: 'bundle' }],
  php: [{ files: ['composer.json'], manager: 'composer', command: 'composer install --no-interaction', tool: 'composer' }],
};

/** Every file name any rule looks at, for the remote `find`. */
export const MANIFEST_FILES: string[] = [...new Set(Object.values(ECOSYSTEMS).flatMap((rules) => rules.flatMap((r) => r.files)))];

/**
 * Directories a manifest below them does not make a project of: installed dependencies,
 * virtualenvs, build output and VCS data.
 */
export const IGNORED_DIRECTORIES = ['.git', 'node_modules', '.venv', 'venv', 'vendor', 'target', 'dist', 'build', '.next', '__pycache__', '.yarn', '.cache'];

function isAncestor(ancestor: string, dir: string): boolean {
  return ancestor === '.' || dir.startsWith(`${ancestor}/`);
}

/**
 * Install plans for a repository, from its files' paths relative to the repository (as `find .`
 * prints them, with or without `./`). A directory gets at most one plan per ecosystem, and none
 * for an ecosystem an ancestor directory already installs: the root's install covers workspace
 * members (npm/pnpm/yarn workspaces, Cargo workspaces), and fixtures under a project are not
 * projects. Plans come shallowest first, in a fixed order.
 */
export function planInstalls(files: string[], repoDir: string): InstallPlan[] {
  const byDir = new Map<string, Set<string>>();
  for (const raw of files) {
    const file = path.normalize(raw.trim().replace(/^\.\//, ''));
    if (file === '' || file === '.' || file.startsWith('../')) continue;
    const segments = file.split('/');
    if (segments.slice(0, -1).some((s) => IGNORED_DIRECTORIES.includes(s))) continue;
    const dir = path.dirname(file);
    if (!byDir.has(dir)) byDir.set(dir, new Set());
    byDir.get(dir)!.add(path.basename(file));
  }
  const dirs = [...byDir.keys()].sort((a, b) => depth(a) - depth(b) || (a < b ? -1 : a > b ? 1 : 0));
  const plans: InstallPlan[] = [];
  const covered = new Map<string, string[]>();
  for (const dir of dirs) {
    const present = byDir.get(dir)!;
    for (const [ecosystem, rules] of Object.entries(ECOSYSTEMS)) {
      if ((covered.get(ecosystem) ?? []).some((a) => isAncestor(a, dir))) continue;
      const rule = rules.find((r) => r.files.every((f) => present.has(f)));
      if (!rule) continue;
      covered.set(ecosystem, [...(covered.get(ecosystem) ?? []), dir]);
      plans.push({
        manager: rule.manager,
        directory: dir === '.' ? repoDir : path.join(repoDir, dir),
        command: rule.command,
        tool: rule.tool,
        manifest: dir === '.' ? rule.files[0]! : path.join(dir, rule.files[0]!),
      });
    }
  }
  return plans;
}

function depth(dir: string): number {
  return dir === '.' ? 0 : dir.split('/').length;
}
