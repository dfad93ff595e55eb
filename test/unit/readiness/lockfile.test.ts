import { describe, expect, it } from 'vitest';
import { lockfile } from '../../../src/modules/readiness/criteria/index.ts';
import { pkg, useFixtureRepos } from './fixture-repo.ts';

const { score } = useFixtureRepos();

describe('lockfile criterion', () => {
  it('fails a Node package without a lockfile and names what it looked for', async () => {
    const s = await score(lockfile, { 'package.json': pkg({ name: 'a' }) });
    expect(s).toMatchObject({ numerator: 0, denominator: 1 });
    expect(s.rationale).toContain('no lockfile for package.json (looked for package-lock.json');
  });

  it('counts a root lockfile for every workspace member', async () => {
    const s = await score(lockfile, {
      'package.json': pkg({ private: true, workspaces: ['packages/*'] }),
      'pnpm-lock.yaml': 'lockfileVersion: 9\n',
      'packages/a/package.json': pkg({ name: 'a' }),
      'packages/b/package.json': pkg({ name: 'b' }),
    });
    expect(s).toEqual({
      numerator: 2,
      denominator: 2,
      rationale: 'packages/a: pnpm-lock.yaml locks dependency versions; packages/b: pnpm-lock.yaml locks dependency versions',
    });
  });

  it('accepts fully pinned requirements.txt but not loose ones', async () => {
    expect(await score(lockfile, { 'setup.py': '', 'requirements.txt': 'flask==3.0.0\n# c\nrequests==2.32.0\n' })).toMatchObject({ numerator: 1 });
    expect(await score(lockfile, { 'setup.py': '', 'requirements.txt': 'flask>=3\nrequests==2.32.0\n' })).toMatchObject({ numerator: 0 });
  });

  it('treats a Go module without requirements as locked, and one with them as needing go.sum', async () => {
    expect(await score(lockfile, { 'go.mod': 'module example.com/a\n\ngo 1.22\n' })).toMatchObject({ numerator: 1 });
    expect(await score(lockfile, { 'go.mod': 'module example.com/a\n\nrequire golang.org/x/mod v0.1.0\n' })).toMatchObject({ numerator: 0 });
    expect(await score(lockfile, { 'go.mod': 'module example.com/a\n\nrequire golang.org/x/mod v0.1.0\n', 'go.sum': 'x\n' })).toMatchObject({ numerator: 1 });
  });
});
