import { describe, expect, it } from 'vitest';
import { installPlanSchema, planInstalls, type InstallPlan } from '../../src/provisioning/machine/install-plan.ts';

const repo = '/home/u/workspace/app';
const at = (files: string[]) => planInstalls(files, repo).map((p) => [p.manager, p.command]);

describe('planInstalls: the decision table', () => {
  it.each([
    [['package-lock.json', 'package.json'], 'npm', 'npm ci'],
    [['npm-shrinkwrap.json', 'package.json'], 'npm', 'npm ci'],
    [['package.json'], 'npm', 'npm install'],
    [['pnpm-lock.yaml', 'package.json'], 'pnpm', 'pnpm install --frozen-lockfile'],
    [['yarn.lock', 'package.json'], 'yarn', 'yarn install --frozen-lockfile'],
    [['yarn.lock', '.yarnrc.yml', 'package.json'], 'yarn', 'yarn install --immutable'],
    [['bun.lockb', 'package.json'], 'bun', 'bun install'],
    [['bun.lock', 'package.json'], 'bun', 'bun install'],
    [['uv.lock', 'pyproject.toml'], 'uv', 'uv sync'],
    [['poetry.lock', 'pyproject.toml'], 'poetry', 'poetry install'],
    [['requirements.txt'], 'pip', 'python3 -m venv .venv && .venv/bin/pip install -r requirements.txt'],
    [['requirements.txt', 'pyproject.toml'], 'pip', 'python3 -m venv .venv && .venv/bin/pip install -r requirements.txt'],
    [['pyproject.toml'], 'pip', 'python3 -m venv .venv && .venv/bin/pip install -e .'],
    [['go.mod', 'go.sum'], 'go', 'go mod download'],
    [['Cargo.toml', 'Cargo.lock'], 'cargo', 'cargo fetch'],
    [['Gemfile', 'Gemfile.lock'], 'bundler', 'bundle install'],
    [['composer.json'], 'composer', 'composer install --no-interaction'],
  ])('%j -> %s', (files, manager, command) => {
    expect(at(files)).toEqual([[manager, command]]);
  });

  it('picks one JavaScript manager per directory when lockfiles of several are present', () => {
    expect(at(['package.json', 'package-lock.json', 'yarn.lock', 'pnpm-lock.yaml'])).toEqual([['pnpm', 'pnpm install --frozen-lockfile']]);
    expect(at(['package.json', 'package-lock.json', 'yarn.lock'])).toEqual([['yarn', 'yarn install --frozen-lockfile']]);
  });

  it('plans one install per ecosystem of a polyglot directory, in a fixed order', () => {
    expect(at(['Gemfile', 'go.mod', 'requirements.txt', 'package.json', 'Cargo.toml'])).toEqual([
      ['npm', 'npm install'],
      ['pip', 'python3 -m venv .venv && .venv/bin/pip install -r requirements.txt'],
      ['go', 'go mod download'],
      ['cargo', 'cargo fetch'],
      ['bundler', 'bundle install'],
    ]);
  });

  it('gives each plan its directory, tool and manifest', () => {
    const plans = planInstalls(['./package.json', './package-lock.json', './services/api/go.mod'], repo);
    expect(plans).toEqual<InstallPlan[]>([
      { manager: 'npm', directory: repo, command: 'npm ci', tool: 'npm', manifest: 'package-lock.json' },
      { manager: 'go', directory: `${repo}/services/api`, command: 'go mod download', tool: 'go', manifest: 'services/api/go.mod' },
    ]);
    for (const p of plans) expect(installPlanSchema.parse(p)).toEqual(p);
  });

  it('leaves workspace members to the root install of the same ecosystem', () => {
    const files = [
      'package.json',
      'pnpm-lock.yaml',
      'packages/a/package.json',
      'packages/b/package.json',
      'Cargo.toml',
      'crates/x/Cargo.toml',
      'tools/py/requirements.txt',
    ];
    expect(planInstalls(files, repo).map((p) => [p.manager, p.directory])).toEqual([
      ['pnpm', repo],
      ['cargo', repo],
      ['pip', `${repo}/tools/py`],
    ]);
  });

  it('finds separate projects in subdirectories when the root has none', () => {
    expect(planInstalls(['frontend/package.json', 'frontend/yarn.lock', 'backend/go.mod', 'README.md'], repo).map((p) => [p.manager, p.directory])).toEqual([
      ['go', `${repo}/backend`],
      ['yarn', `${repo}/frontend`],
    ]);
  });

  it('ignores manifests inside installed dependencies, virtualenvs, build output and .git', () => {
    const files = [
      'node_modules/x/package.json',
      '.venv/lib/pyproject.toml',
      'vendor/y/go.mod',
      'target/z/Cargo.toml',
      '.git/package.json',
      'dist/package.json',
    ];
    expect(planInstalls(files, repo)).toEqual([]);
  });

  it('plans nothing for a repository without manifests, or for lone lockfiles', () => {
    expect(planInstalls(['README.md', 'src/main.c', ''], repo)).toEqual([]);
    expect(planInstalls(['Gemfile.lock', 'go.sum', 'Cargo.lock'], repo)).toEqual([]);
  });
});
