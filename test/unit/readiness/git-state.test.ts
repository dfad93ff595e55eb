import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { readGitState } from '../../../src/modules/readiness/git-state.ts';
import { localWorkspace } from '../../../src/repos/local-workspace.ts';
import { git, useFixtureRepos } from './fixture-repo.ts';

const { root, make } = useFixtureRepos();
const ws = localWorkspace(root);

describe('git state of a checkout', () => {
  it('reports a fresh clone as clean and fully pushed, on its branch', async () => {
    const origin = make({ 'a.txt': 'a' });
    git(root, 'clone', '-q', origin.name, 'clone-1');
    const head = git(origin.dir, 'rev-parse', 'HEAD').trim();
    expect(await readGitState(ws, 'clone-1')).toEqual({ commitHash: head, branch: 'main', hasLocalChanges: false, hasNonRemoteCommits: false });
  });

  it('sees uncommitted edits, untracked files and unpushed commits', async () => {
    const origin = make({ 'a.txt': 'a' });
    git(root, 'clone', '-q', origin.name, 'clone-2');
    const dir = path.join(root, 'clone-2');
    fs.writeFileSync(path.join(dir, 'new.txt'), 'untracked');
    expect(await readGitState(ws, 'clone-2')).toMatchObject({ hasLocalChanges: true, hasNonRemoteCommits: false });
    git(dir, 'add', '-A');
    git(dir, 'commit', '-q', '-m', 'local only');
    const state = await readGitState(ws, 'clone-2');
    expect(state).toMatchObject({ hasLocalChanges: false, hasNonRemoteCommits: true });
    expect(state.commitHash).toBe(git(dir, 'rev-parse', 'HEAD').trim());
  });

  it('reports a detached HEAD without a branch, and a repository without remotes as unpushed', async () => {
    const repo = make({ 'a.txt': 'a' });
    expect(await readGitState(ws, repo.name)).toMatchObject({ branch: 'main', hasNonRemoteCommits: true });
    git(repo.dir, 'checkout', '-q', '--detach');
    expect(await readGitState(ws, repo.name)).toMatchObject({ branch: null });
  });
});
