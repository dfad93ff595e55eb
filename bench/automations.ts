/**
 * CI automations on a real Gitea (built by scripts/gitea-toolchain.sh). Run on demand:
 *
 *   node bench/automations.ts [--repos 50] [--edit 20] [--runs 30]
 *
 * Scan: the organization's repositories (each with two workflow files), cold (forceRefresh=true)
 * and from the 30-minute cache; goal: cached p50 under 20 ms. Edit: one `create` across 20
 * repositories, beside the forge's own API calls for the same result made back to back (per
 * repository: one contents call that cuts the branch and commits, one pull request); goal: under 2×.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { issueApiKey } from '../src/auth/issue-api-key.ts';
import { compose } from '../src/compose.ts';
import { loadConfig } from '../src/config.ts';
import { openDatabase } from '../src/db/client.ts';
import { migrateDatabase } from '../src/db/migrations.ts';
import { newId } from '../src/lib/ids.ts';
import { createLogger } from '../src/lib/logger.ts';
import { createProviderRegistry } from '../src/provisioning/providers/registry.ts';
import { giteaBinDir, startGitea } from '../test/support/gitea.ts';

const { values: args } = parseArgs({
  options: { repos: { type: 'string', default: '50' }, edit: { type: 'string', default: '20' }, runs: { type: 'string', default: '30' } },
});
const REPOS = Number(args.repos);
const EDIT = Number(args.edit);
const RUNS = Number(args.runs);

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!;
const ms = (n: number) => `${n.toFixed(1)} ms`;
const timed = async <T>(fn: () => Promise<T>): Promise<[number, T]> => {
  const t = performance.now();
  const value = await fn();
  return [performance.now() - t, value];
};

const bin = giteaBinDir();
if (!bin) throw new Error('Gitea is not built: run bash scripts/gitea-toolchain.sh first');
const gitea = await startGitea(bin);
// The embedded database (PGlite), as `agentplane serve` runs by default; the forge is on loopback.
const log = createLogger({ level: 'warn' });
const dataDir = mkdtempSync(join(tmpdir(), 'agentplane-bench-'));
const config = loadConfig({ AGENTPLANE_DATA_DIR: dataDir, AGENTPLANE_EGRESS_ALLOW: '127.0.0.0/8', AGENTPLANE_LOCAL_PROVIDER: 'false' });
const db = await openDatabase(config);
await migrateDatabase(db, log);
const plane = await compose({ config, db, log, overrides: { providers: createProviderRegistry([]), queue: { send: async () => '' } } });
await plane.start();
const org = await db.prisma.organization.create({ data: { id: newId('org'), name: 'bench' } });
const owner = await db.prisma.user.create({ data: { id: newId('usr'), email: 'owner@bench.test' } });
await db.prisma.membership.create({ data: { id: newId('mem'), organizationId: org.id, userId: owner.id, role: 'owner' } });
const key = await issueApiKey(db.prisma, { organizationId: org.id, owner: { userId: owner.id }, name: 'bench', now: new Date() });
const server = await plane.listen(0, '127.0.0.1');
const api = {
  async call(method: string, path: string, opts: { as: string; body?: unknown }) {
    const res = await fetch(`${server.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${opts.as}`, ...(opts.body ? { 'content-type': 'application/json' } : {}) },
      body: opts.body ? JSON.stringify(opts.body) : undefined,
    });
    return { status: res.status, body: (await res.json()) as any };
  },
};
try {
  const user = await gitea.createUser('bench');
  await gitea.createOrg(user, 'bench-org');
  const ci = 'name: CI\non: [push, pull_request]\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n      - run: make test\n';
  const agent =
    "name: nightly\non:\n  schedule:\n    - cron: '0 3 * * *'\njobs:\n  a:\n    runs-on: ubuntu-latest\n    env:\n      AGENTPLANE_MODE: custom\n    steps:\n      - run: npx agentplane ci run\n";
  const names = Array.from({ length: REPOS }, (_, i) => `svc-${String(i).padStart(3, '0')}`);
  const [setup] = await timed(async () => {
    for (const name of names) {
      await gitea.createRepo(user, { org: 'bench-org', name, files: { '.gitea/workflows/ci.yml': ci, '.gitea/workflows/nightly.yml': agent } });
    }
  });
  process.stdout.write(`setup: ${REPOS} repositories with 2 workflows each in ${(setup / 1000).toFixed(1)} s\n`);

  const as = key.value;
  const made = await api.call('POST', '/api/v0/integrations/source-control', { as, body: { provider: 'gitea', baseUrl: gitea.url, token: user.token } });
  if (made.status !== 201) throw new Error(`connect: ${made.status} ${JSON.stringify(made.body)}`);

  const cold: number[] = [];
  for (let i = 0; i < 3; i++) {
    const [t, res] = await timed(() => api.call('GET', '/api/v0/automations/ci/scan?forceRefresh=true', { as }));
    if (res.body.workflows.length !== REPOS * 2 || res.body.cached) throw new Error(`scan found ${res.body.workflows.length} workflows`);
    cold.push(t);
  }
  const cached: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const [t, res] = await timed(() => api.call('GET', '/api/v0/automations/ci/scan', { as }));
    if (!res.body.cached) throw new Error('the scan was not served from the cache');
    cached.push(t);
  }
  process.stdout.write(
    `scan of ${REPOS} repositories (${REPOS * 2} workflows): cold p50 ${ms(pct(cold, 0.5))} (3 runs), cached p50 ${ms(pct(cached, 0.5))} p90 ${ms(pct(cached, 0.9))} (${RUNS} runs; goal: p50 < 20 ms)\n`,
  );

  const editRepos = names.slice(0, EDIT);
  const [editMs, edit] = await timed(() =>
    api.call('POST', '/api/v0/automations/ci/edit', {
      as,
      body: { action: 'create', modeId: 'code-review', automationName: 'bench review', repos: editRepos.map((n) => ({ repoFullName: `bench-org/${n}` })) },
    }),
  );
  const opened = (edit.body.sessions as { prUrl?: string; error?: string }[]).filter((s) => s.prUrl).length;
  if (opened !== EDIT) throw new Error(`edit opened ${opened} of ${EDIT}: ${JSON.stringify(edit.body.sessions.find((s: { error?: string }) => s.error))}`);

  // The same result by the forge's own API, one call after another: branch + commit, then the pull request.
  const content = Buffer.from(ci).toString('base64');
  const [forgeMs] = await timed(async () => {
    for (const name of names.slice(EDIT, EDIT * 2)) {
      const repo = `bench-org/${name}`;
      const commit = await gitea.api('POST', `/repos/${repo}/contents/.gitea/workflows/direct.yml`, {
        as: user,
        body: { content, message: 'add', branch: 'main', new_branch: 'direct' },
      });
      const pr = await gitea.api('POST', `/repos/${repo}/pulls`, { as: user, body: { title: 'add', head: 'direct', base: 'main' } });
      if (commit.status !== 201 || pr.status !== 201) throw new Error(`direct: ${commit.status} ${pr.status}`);
    }
  });
  process.stdout.write(
    `edit across ${EDIT} repositories: ${ms(editMs)}; the forge's own calls back to back (${EDIT * 2} calls): ${ms(forgeMs)}; ratio ${(editMs / forgeMs).toFixed(2)}× (goal < 2×)\n`,
  );
} finally {
  await plane.stop();
  await db.close();
  await gitea.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
