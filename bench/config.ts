/**
 * Platform as code. Run on demand (the push figures need a real Gitea: scripts/gitea-toolchain.sh):
 *
 *   node bench/config.ts [--documents 500] [--runs 7]
 *
 * Plan: POST /api/v0/config/plan of N ComputerTemplate documents against N existing templates,
 * beside listing those templates (GET /api/v0/computer-templates); goal p50 under 1 s.
 * Push: a commit to a source's repository applied (revision recorded) after Gitea sends its push
 * webhook (from the webhook's arrival, and from the commit call's return), beside the commit call
 * itself; goal under 5 s. Unchanged: the control plane's CPU for one reconcile of a source whose
 * head is applied, beside the same wall time spent polling without one (PGlite runs in this
 * process, so the polling's queries count); goal under 50 ms above that baseline.
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
import { giteaBinDir, startGitea } from '../test/support/gitea.ts';

const { values: args } = parseArgs({ options: { documents: { type: 'string', default: '500' }, runs: { type: 'string', default: '7' } } });
const N = Number(args.documents);
const RUNS = Number(args.runs);

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const ms = (n: number) => `${n.toFixed(1)} ms`;
const timed = async (fn: () => Promise<unknown>) => {
  const t = performance.now();
  await fn();
  return performance.now() - t;
};
const sleep = (msec: number) => new Promise((r) => setTimeout(r, msec));
async function until(probe: () => Promise<boolean>, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error('timed out');
    await sleep(20);
  }
}

const template = (i: number, script: string) =>
  `apiVersion: agentplane.dev/v1\nkind: ComputerTemplate\nmetadata:\n  name: tpl-${String(i).padStart(4, '0')}\nspec:\n  repos: [https://git.example.test/acme/svc-${i}.git]\n  autoInstallDeps: true\n  setupScript: ${script}\n`;
const documents = (n: number, script: (i: number) => string) => Array.from({ length: n }, (_, i) => template(i, script(i))).join('---\n');

const log = createLogger({ level: 'warn' });
const dataDir = mkdtempSync(join(tmpdir(), 'agentplane-bench-config-'));
const config = loadConfig({ AGENTPLANE_DATA_DIR: dataDir, AGENTPLANE_EGRESS_ALLOW: '127.0.0.0/8', AGENTPLANE_LOCAL_PROVIDER: 'false' });
const db = await openDatabase(config);
await migrateDatabase(db, log);
const plane = await compose({ config, db, log });
await plane.start();
const org = await db.prisma.organization.create({ data: { id: newId('org'), name: 'bench' } });
const owner = await db.prisma.user.create({ data: { id: newId('usr'), email: 'owner@bench.test' } });
await db.prisma.membership.create({ data: { id: newId('mem'), organizationId: org.id, userId: owner.id, role: 'owner', status: 'active' } });
const key = (await issueApiKey(db.prisma, { organizationId: org.id, owner: { userId: owner.id }, name: 'bench', now: new Date() })).value;
const server = await plane.listen(0, '127.0.0.1');
const call = async (method: string, path: string, body?: unknown) => {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const json = (await res.json()) as any;
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json).slice(0, 300)}`);
  return json;
};

const gitea = giteaBinDir() ? await startGitea(giteaBinDir()!) : undefined;
try {
  // ---- plan of N documents ----
  await call('POST', '/api/v0/config/apply', { files: [{ path: 'templates.yaml', content: documents(N, () => 'echo v1') }] });
  // Every tenth template changed: a plan with updates, the rest unchanged.
  const files = [{ path: 'templates.yaml', content: documents(N, (i) => (i % 10 === 0 ? 'echo v2' : 'echo v1')) }];
  const plans: number[] = [];
  const lists: number[] = [];
  for (let r = 0; r < RUNS; r++) {
    lists.push(await timed(() => call('GET', '/api/v0/computer-templates')));
    plans.push(await timed(() => call('POST', '/api/v0/config/plan', { files })));
  }
  process.stdout.write(`plan of ${N} documents: median ${ms(median(plans))} (goal < 1000 ms); baseline, listing the ${N} templates: ${ms(median(lists))}\n`);

  if (!gitea) {
    process.stdout.write('push and unchanged-reconcile figures skipped: Gitea is not built (bash scripts/gitea-toolchain.sh)\n');
  } else {
    const user = await gitea.createUser('bench');
    const repo = await gitea.createRepo(user, { name: 'platform', files: { 'config/templates.yaml': documents(20, () => 'echo v1') } });
    const source = await call('POST', '/api/v0/config/sources', { repository: `${gitea.url}/${repo}.git`, branch: 'main', path: 'config' });
    const head = async () => (await gitea.api('GET', `/repos/${repo}/branches/main`)).body.commit.id as string;
    const row = () => db.prisma.configSource.findUniqueOrThrow({ where: { id: source.id } });
    await until(async () => (await row()).lastAppliedCommit === (await head()));
    await gitea.api('POST', `/repos/${repo}/hooks`, {
      as: user,
      body: { type: 'gitea', active: true, events: ['push'], config: { url: source.webhookUrl, content_type: 'json', secret: source.webhookSecret } },
    });

    // ---- push to revision ----
    const pushes: number[] = [];
    const commits: number[] = [];
    const fromWebhook: number[] = [];
    for (let r = 0; r < RUNS; r++) {
      const c = performance.now();
      await gitea.commitFiles(user, repo, { 'config/templates.yaml': documents(20, () => `echo run-${r}`) }, { message: `run ${r}` });
      // Gitea sends the push webhook as the commit call returns.
      const t = performance.now();
      commits.push(t - c);
      const commit = await head();
      await until(async () => (await db.prisma.configRevision.count({ where: { organizationId: org.id, commit } })) === 1);
      pushes.push(performance.now() - t);
      // The reconcile the webhook sent: from its arrival (the job's creation) to the revision.
      const [sent] = await db.prisma.$queryRaw<
        { at: Date }[]
      >`SELECT created_on AS at FROM pgboss.job WHERE name = 'config.reconcile' ORDER BY created_on DESC LIMIT 1`;
      fromWebhook.push(Date.now() - sent!.at.getTime());
    }
    process.stdout.write(
      `push to revision: median ${ms(median(fromWebhook))} after the webhook arrives (goal < 5000 ms), ${ms(median(pushes))} after the commit call returns (Gitea sends the webhook after it); baseline, the commit call itself: ${ms(median(commits))}\n`,
    );

    // ---- reconcile of an unchanged source: this process's CPU ----
    const busy: number[] = [];
    const idle: number[] = [];
    const net: number[] = [];
    for (let r = 0; r < RUNS; r++) {
      const before = (await row()).lastAttemptAt!.getTime();
      const start = performance.now();
      const cpu = process.cpuUsage();
      await call('POST', `/api/v0/config/sources/${source.id}/reconcile`);
      await until(async () => (await row()).lastAttemptAt!.getTime() > before);
      const used = process.cpuUsage(cpu);
      busy.push((used.user + used.system) / 1000);
      const wall = performance.now() - start;
      // The same wall time spent polling as above, with no reconcile: what the waiting itself costs.
      const quiet = process.cpuUsage();
      const end = performance.now() + wall;
      await until(async () => (await row()) !== null && performance.now() > end);
      const still = process.cpuUsage(quiet);
      idle.push((still.user + still.system) / 1000);
      net.push(busy.at(-1)! - idle.at(-1)!);
    }
    process.stdout.write(
      `unchanged reconcile: median ${ms(median(net))} of control-plane CPU above the baseline (goal < 50 ms; git runs in its own process), ${ms(median(busy))} in all; baseline, the same wall time polling with no reconcile: ${ms(median(idle))}\n`,
    );
  }
} finally {
  await plane.stop(5_000);
  await db.close();
  await gitea?.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
