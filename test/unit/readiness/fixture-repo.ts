import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll } from 'vitest';
import { detectApps } from '../../../src/modules/readiness/apps.ts';
import type { Score } from '../../../src/modules/readiness/criteria/index.ts';
import type { Criterion } from '../../../src/modules/readiness/criteria/types.ts';
import { localWorkspace } from '../../../src/repos/local-workspace.ts';
import { openRepoContext, type RepoContext } from '../../../src/modules/readiness/repo-context.ts';

export type Files = Record<string, string | Buffer>;

const GIT_IDENTITY = ['-c', 'user.name=Fixture', '-c', 'user.email=fixture@example.test', '-c', 'commit.gpgsign=false'];

export function git(dir: string, ...args: string[]): string {
  return execFileSync('git', [...GIT_IDENTITY, ...args], { cwd: dir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/** Writes `files` into `dir` (creating folders). */
export function writeFiles(dir: string, files: Files): void {
  for (const [name, content] of Object.entries(files)) {
    const file = path.join(dir, name);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, content);
  }
}

/**
 * Real git repositories with chosen files, one commit each, under one temp directory that is
 * removed after the test file.
 */
export function useFixtureRepos() {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'agentplane-readiness-fixtures-'));
  let n = 0;
  afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

  /** A repository holding `files` in one commit on `main`; returns its directory name under root. */
  function make(files: Files): { root: string; name: string; dir: string } {
    const name = `repo-${++n}`;
    const dir = path.join(root, name);
    fs.mkdirSync(dir);
    git(dir, 'init', '-q', '-b', 'main');
    writeFiles(dir, files);
    git(dir, 'add', '-A');
    git(dir, 'commit', '-q', '--allow-empty', '-m', 'fixture');
    return { root, name, dir };
  }

  /** The evaluator's view of a fresh repository holding `files`. */
  async function context(files: Files): Promise<RepoContext> {
    const repo = make(files);
    const base = await openRepoContext(localWorkspace(root), repo.name);
    return { ...base, apps: await detectApps(base) };
  }

  /** Scores one criterion on a fresh repository holding `files`. */
  async function score(criterion: Criterion, files: Files): Promise<Score> {
    return criterion.evaluate(await context(files));
  }

  return { root, make, context, score };
}

export const pkg = (value: Record<string, unknown>) => JSON.stringify(value, null, 2);
