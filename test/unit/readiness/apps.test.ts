import { describe, expect, it } from 'vitest';
import { pkg, useFixtureRepos } from './fixture-repo.ts';

const { context } = useFixtureRepos();
const appsOf = async (files: Record<string, string>) =>
  (await context(files)).apps.map(({ path, ecosystem, description }) => ({ path, ecosystem, description }));

describe('application detection', () => {
  it('takes a single package at the root, described by its manifest', async () => {
    expect(await appsOf({ 'package.json': pkg({ name: 'billing', description: 'Billing webhooks' }), 'src/index.ts': '' })).toEqual([
      { path: '.', ecosystem: 'node', description: 'Billing webhooks' },
    ]);
  });

  it('takes npm workspace members, not the root, honouring exclusions', async () => {
    expect(
      await appsOf({
        'package.json': pkg({ private: true, workspaces: ['packages/*', 'apps/**', '!packages/internal'] }),
        'packages/ui/package.json': pkg({ name: '@acme/ui', description: 'Design system' }),
        'packages/internal/package.json': pkg({ name: '@acme/internal' }),
        'apps/web/site/package.json': pkg({ name: 'site' }),
        'apps/web/site/README.md': '# Site\n\n![badge](x)\n\nThe public marketing site.\n\nMore.\n',
        'node_modules/left-pad/package.json': pkg({ name: 'left-pad' }),
      }),
    ).toEqual([
      { path: 'apps/web/site', ecosystem: 'node', description: 'The public marketing site.' },
      { path: 'packages/ui', ecosystem: 'node', description: 'Design system' },
    ]);
  });

  it('reads pnpm, Cargo and go.work workspaces', async () => {
    expect(
      (
        await appsOf({ 'package.json': pkg({}), 'pnpm-workspace.yaml': "packages:\n  - 'libs/*'\n  # comment\n", 'libs/a/package.json': pkg({ name: 'a' }) })
      ).map((a) => a.path),
    ).toEqual(['libs/a']);
    expect(
      await appsOf({
        'Cargo.toml': '[workspace]\nmembers = ["crates/*"]\n',
        'crates/core/Cargo.toml': '[package]\nname = "core"\ndescription = "Core types"\n',
      }),
    ).toEqual([{ path: 'crates/core', ecosystem: 'rust', description: 'Core types' }]);
    expect((await appsOf({ 'go.work': 'go 1.22\nuse ./api\n', 'api/go.mod': 'module example.com/api\n' }))[0]).toEqual({
      path: 'api',
      ecosystem: 'go',
      description: 'Go module example.com/api in api (no description found in its manifest or README)',
    });
  });

  it('without workspaces or a root manifest, takes each project up to two levels deep', async () => {
    expect(
      (
        await appsOf({
          'backend/pyproject.toml': '[project]\nname = "api"\ndescription = "REST API"\n',
          'frontend/package.json': pkg({ name: 'web' }),
          'tools/gen/deep/package.json': pkg({ name: 'too-deep' }),
          'examples/demo/package.json': pkg({ name: 'demo' }),
        })
      ).map((a) => [a.path, a.ecosystem, a.description]),
    ).toEqual([
      ['backend', 'python', 'REST API'],
      ['frontend', 'node', 'Node.js package web in frontend (no description found in its manifest or README)'],
    ]);
  });

  it('falls back to the root as one application, described by its README', async () => {
    expect(await appsOf({ 'README.md': '# dotfiles\n\nMy shell configuration.\n', zshrc: '' })).toEqual([
      { path: '.', ecosystem: 'unknown', description: 'My shell configuration.' },
    ]);
    expect((await appsOf({ 'a.txt': '' }))[0]!.description).toBe('Repository at the repository root (no description found in its manifest or README)');
  });
});
