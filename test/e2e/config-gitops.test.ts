import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configReconcileJob } from '../../src/modules/config/job-kinds.ts';
import { ALLOW_LOOPBACK, startTestApi, type TestApi } from '../support/api.ts';
import { chromiumMissing, launchChromium } from '../support/browser.ts';
import { expectAccessible, signInConsole } from '../support/console-page.ts';
import { giteaBinDir, giteaMissing, mergeWhenReady, startGitea, type Gitea, type GiteaUser } from '../support/gitea.ts';
import { skipWithout } from '../support/parts.ts';
import { localProviderMissing } from '../support/local-computers.ts';
import { BACKENDS } from '../support/test-db.ts';
import { waitFor } from '../support/wait.ts';

const bin = giteaBinDir();
const skip = skipWithout('the GitOps tests against a real Gitea', giteaMissing());
// PostgreSQL where the tests have it (concurrent reconciles are its case); PGlite otherwise.
const backend = BACKENDS.at(-1)!;
// The warm pool's convergence after a push provisions a real `local` computer where the host can.
const localMissing = await localProviderMissing();
const LOCAL: Record<string, string> = localMissing
  ? {}
  : { AGENTPLANE_LOCAL_PROVIDER: 'true', AGENTPLANE_COMPUTER_CPUS: '0.5', AGENTPLANE_COMPUTER_MEMORY_MIB: '256' };

const template = (name: string, script: string) =>
  `apiVersion: agentplane.dev/v1\nkind: ComputerTemplate\nmetadata:\n  name: ${name}\nspec:\n  repos: []\n  setupScript: ${script}\n`;

interface Source {
  id: string;
  webhookUrl: string;
  status: { lastAppliedCommit: string | null; lastCommit: string | null; lastResult: { ok: boolean; message: string; problems?: any[] } | null; drift: any[] };
}

/** A repository of documents on a real Gitea, reconciled on push and on demand. */
describe.skipIf(skip)(`GitOps sources against a real Gitea on ${backend}`, () => {
  let gitea: Gitea;
  let alice: GiteaUser;
  let api: TestApi;
  let owner: string;
  let repoUrl: string;
  const REPO = 'alice/platform';

  const head = async () => (await gitea.api('GET', `/repos/${REPO}/branches/main`)).body.commit.id as string;
  const source = async (id: string) => (await api.call('GET', `/api/v0/config/sources/${id}`, { as: owner })).body as Source;
  const script = async (name: string) =>
    ((await api.call('GET', '/api/v0/computer-templates', { as: owner })).body.templates as { name: string; setupScript?: string }[]).find(
      (t) => t.name === name,
    )?.setupScript;
  const templateId = async (name: string) =>
    ((await api.call('GET', '/api/v0/computer-templates', { as: owner })).body.templates as { id: string; name: string }[]).find((t) => t.name === name)!.id;
  const applied = (id: string, commit: string) =>
    waitFor(`source ${id} at ${commit}`, async () => {
      const s = await source(id);
      return s.status.lastAppliedCommit === commit && s;
    });
  const reconcile = async (id: string) => {
    const before = (await api.db.prisma.configSource.findUniqueOrThrow({ where: { id } })).lastAttemptAt?.getTime() ?? 0;
    expect((await api.call('POST', `/api/v0/config/sources/${id}/reconcile`, { as: owner })).status).toBe(202);
    return waitFor(`a reconcile of ${id}`, async () => {
      const row = await api.db.prisma.configSource.findUniqueOrThrow({ where: { id } });
      return (row.lastAttemptAt?.getTime() ?? 0) > before && (await source(id));
    });
  };
  const create = async (body: Record<string, unknown>) => {
    const res = await api.call('POST', '/api/v0/config/sources', { as: owner, body: { repository: repoUrl, branch: 'main', path: 'config', ...body } });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body as Source & { webhookSecret: string };
  };

  beforeAll(async () => {
    gitea = await startGitea(bin!);
    alice = await gitea.createUser('alice');
    await gitea.createRepo(alice, {
      name: 'platform',
      files: {
        'config/templates.yaml': `${template('web', 'echo v1')}---\n${template('batch', 'echo batch')}`,
        // Outside the source's path: never read.
        'other/ignored.yaml': 'not: [valid',
      },
    });
    await gitea.createRepo(alice, {
      name: 'app',
      files: { '.github/workflows/ci.yml': 'name: CI\non: [push]\njobs:\n  t:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo t\n' },
    });
    repoUrl = `${gitea.url}/${REPO}.git`;
    api = await startTestApi(backend, { worker: true, env: { ...ALLOW_LOOPBACK, ...LOCAL } });
    owner = api.acme.members.owner.apiKey;
  }, 120_000);
  afterAll(async () => {
    await api?.close();
    await gitea?.stop();
  });

  it('a source applies its repository, then a push applies the new commit; drift is reported (warn); prune is off', { timeout: 120_000 }, async () => {
    // Only managers and owners define sources; other organizations never see them.
    for (const as of [api.acme.members.user.apiKey, api.acme.serviceAccount.apiKey]) {
      expect((await api.call('POST', '/api/v0/config/sources', { as, body: { repository: repoUrl } })).status).toBe(403);
    }
    const created = await create({});
    expect(created).toMatchObject({ intervalSeconds: 180, prune: false, drift: 'warn', webhookUrl: `${api.url}/api/v0/config/sources/${created.id}/webhook` });
    expect((await api.call('GET', `/api/v0/config/sources/${created.id}`, { as: api.globex.members.owner.apiKey })).status).toBe(404);

    const first = await applied(created.id, await head());
    expect(first.status.lastResult).toMatchObject({ ok: true });
    expect(await script('web')).toBe('echo v1');
    const managed = await api.db.prisma.configResource.findMany({ where: { organizationId: api.acme.id } });
    expect(managed.map((m) => [m.name, m.managedBy, m.file])).toEqual(
      expect.arrayContaining([
        ['web', created.id, 'config/templates.yaml'],
        ['batch', created.id, 'config/templates.yaml'],
      ]),
    );

    // The forge's push webhook, signed with the source's secret, reconciles at once.
    const hook = await gitea.api('POST', `/repos/${REPO}/hooks`, {
      as: alice,
      body: { type: 'gitea', active: true, events: ['push'], config: { url: created.webhookUrl, content_type: 'json', secret: created.webhookSecret } },
    });
    expect(hook.status).toBe(201);
    await gitea.commitFiles(
      alice,
      REPO,
      { 'config/templates.yaml': `${template('web', 'echo v2')}---\n${template('batch', 'echo batch')}` },
      { message: 'web v2' },
    );
    const pushed = await head();
    await applied(created.id, pushed);
    expect(await script('web')).toBe('echo v2');
    const revisions = (await api.call('GET', '/api/v0/config/revisions', { as: owner })).body.revisions;
    expect(revisions[0]).toMatchObject({ source: created.id, commit: pushed, plan: { summary: { update: 1 } } });

    // A push not signed with the secret is refused and starts nothing.
    const forged = await fetch(created.webhookUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gitea-signature': createHmac('sha256', 'guess').update('{}').digest('hex') },
      body: '{}',
    });
    expect(forged.status).toBe(401);

    // Drift, warn: a change through the API stands, and the source lists it.
    const id = await templateId('web');
    expect((await api.call('PATCH', `/api/v0/computer-templates/${id}`, { as: owner, body: { setupScript: 'echo by hand' } })).status).toBe(200);
    const warned = await reconcile(created.id);
    expect(warned.status.drift).toEqual([
      { kind: 'ComputerTemplate', name: 'web', key: 'web', field: 'setupScript', declared: 'echo v2', actual: 'echo by hand' },
    ]);
    expect(await script('web')).toBe('echo by hand');
    const driftEvent = await api.db.prisma.event.findFirst({ where: { organizationId: api.acme.id, type: 'config.drift' } });
    expect(driftEvent?.data).toMatchObject({ sourceId: created.id, mode: 'warn' });

    // A document removed without prune: the object stays.
    await gitea.commitFiles(alice, REPO, { 'config/templates.yaml': template('web', 'echo v2') }, { message: 'drop batch' });
    await applied(created.id, await head());
    expect(await script('batch')).toBe('echo batch');

    // A broken commit changes nothing, names file and line, and is announced.
    const good = await head();
    await gitea.commitFiles(alice, REPO, {
      'config/broken.yaml': 'apiVersion: agentplane.dev/v1\nkind: ComputerTemplate\nmetadata:\n  name: x\nspec:\n  repos: [a\n',
    });
    const broken = await head();
    const failed = await waitFor('the broken commit reported', async () => {
      const s = await source(created.id);
      return s.status.lastCommit === broken && s;
    });
    expect(failed.status.lastAppliedCommit).toBe(good);
    expect(failed.status.lastResult).toMatchObject({
      ok: false,
      problems: [expect.objectContaining({ file: 'config/broken.yaml', line: expect.any(Number) })],
    });
    expect(failed.status.lastResult!.message).toMatch(/config\/broken\.yaml:\d+:\d+/);
    const failure = await api.db.prisma.event.findFirst({ where: { organizationId: api.acme.id, type: 'config.failed' } });
    expect(failure?.data).toMatchObject({ sourceId: created.id, commit: broken });
    expect(await script('web')).toBe('echo by hand');
    await gitea.api('DELETE', `/repos/${REPO}/contents/config/broken.yaml`, { as: alice, body: { sha: await blobSha('config/broken.yaml'), message: 'fix' } });
    await applied(created.id, await head());
    expect((await api.call('DELETE', `/api/v0/config/sources/${created.id}`, { as: owner })).status).toBe(204);
  });

  const blobSha = async (p: string) => (await gitea.api('GET', `/repos/${REPO}/contents/${p}?ref=main`)).body.sha as string;

  it('drift fix puts declared values back and says so; prune deletes what the source manages', { timeout: 120_000 }, async () => {
    await gitea.commitFiles(alice, REPO, { 'config/templates.yaml': `${template('web', 'echo v3')}---\n${template('cron', 'echo cron')}` }, { message: 'v3' });
    const created = await create({ drift: 'fix', prune: true });
    await applied(created.id, await head());
    expect(await script('web')).toBe('echo v3');
    // batch is no longer managed by any source: prune leaves it.
    expect(await script('batch')).toBe('echo batch');

    const id = await templateId('web');
    await api.call('PATCH', `/api/v0/computer-templates/${id}`, { as: owner, body: { setupScript: 'echo drifted' } });
    const fixed = await reconcile(created.id);
    expect(await script('web')).toBe('echo v3');
    expect(fixed.status.drift).toEqual([]);
    const [latest] = (await api.call('GET', '/api/v0/config/revisions?limit=1', { as: owner })).body.revisions;
    expect(latest.plan.changes.find((c: { name: string }) => c.name === 'web')).toMatchObject({
      action: 'update',
      reverts: true,
      fields: [{ field: 'setupScript', old: 'echo drifted', new: 'echo v3' }],
    });

    // This source has no push webhook: an on-demand reconcile reads the new commit.
    await gitea.commitFiles(alice, REPO, { 'config/templates.yaml': template('web', 'echo v3') }, { message: 'drop cron' });
    expect((await reconcile(created.id)).status.lastAppliedCommit).toBe(await head());
    expect(await script('cron')).toBeUndefined();
    expect(await script('batch')).toBe('echo batch');

    // Many reconciles of one source at once: serialized per source, so one new commit makes one revision.
    await gitea.commitFiles(alice, REPO, { 'config/templates.yaml': template('web', 'echo v4') }, { message: 'v4' });
    const commit = await head();
    await Promise.all(Array.from({ length: 6 }, () => api.queue.send(configReconcileJob, { sourceId: created.id })));
    await applied(created.id, commit);
    await waitFor('the queued reconciles to finish', async () => {
      const rows = await api.db.prisma.$queryRaw<
        { n: bigint }[]
      >`SELECT count(*) AS n FROM pgboss.job WHERE name = 'config.reconcile' AND state IN ('created', 'active', 'retry')`;
      return Number(rows[0]!.n) === 0;
    });
    expect(await api.db.prisma.configRevision.count({ where: { organizationId: api.acme.id, commit } })).toBe(1);
  });

  it.skipIf(skipWithout("the console's Configuration page", chromiumMissing()))(
    'the console shows sources with their commit and drift, the latest plan and the revisions',
    { timeout: 180_000 },
    async () => {
      const [live] = (await api.call('GET', '/api/v0/config/sources', { as: owner })).body.sources as Source[];
      const browser = await launchChromium();
      try {
        const page = await signInConsole(browser, api.url, owner, '#/configuration');
        await page.getByRole('heading', { level: 1, name: 'Configuration' }).waitFor();
        const sources = page.getByRole('region', { name: 'Sources' });
        await sources.getByText(repoUrl).waitFor();
        await sources.getByRole('code').getByText(live!.status.lastAppliedCommit!.slice(0, 12)).waitFor();
        const revisions = page.getByRole('region', { name: 'Revisions' });
        const count = await api.db.prisma.configRevision.count({ where: { organizationId: api.acme.id } });
        await revisions.getByRole('button', { name: `#${count}` }).click();
        await revisions.getByText('setupScript').waitFor();
        await expectAccessible(page, 'the Configuration page');
        // Reconcile now, from the page.
        const before = (await api.db.prisma.configSource.findUniqueOrThrow({ where: { id: live!.id } })).lastAttemptAt!.getTime();
        await sources.getByRole('button', { name: 'Reconcile now' }).click();
        await waitFor(
          'the reconcile the page asked for',
          async () => (await api.db.prisma.configSource.findUniqueOrThrow({ where: { id: live!.id } })).lastAttemptAt!.getTime() > before,
        );

        // Pages that show a managed object mark it with its source and file; other objects are not marked.
        const managed = (await api.call('GET', '/api/v0/config/managed', { as: api.acme.members.user.apiKey })).body.resources as any[];
        const web = managed.find((m) => m.kind === 'ComputerTemplate' && m.key === 'web');
        expect(web).toMatchObject({ file: 'config/templates.yaml', source: { repository: repoUrl, branch: 'main', path: 'config' } });
        expect((await api.call('GET', '/api/v0/config/managed', { as: api.globex.members.owner.apiKey })).body.resources).toEqual([]);
        await page.goto(`${api.url}/#/templates`);
        const templates = page.getByRole('region', { name: 'Templates' });
        const webRow = templates.getByRole('row').filter({ has: page.getByRole('rowheader', { name: /^web/ }) });
        await webRow.getByText('Managed by config').waitFor();
        await webRow.getByRole('link', { name: `${repoUrl} (main, config)` }).waitFor();
        await webRow.getByRole('code').getByText('config/templates.yaml').waitFor();
        expect(
          await templates
            .getByRole('row')
            .filter({ has: page.getByRole('rowheader', { name: /^batch/ }) })
            .getByText('Managed by config')
            .count(),
        ).toBe(0);
        await expectAccessible(page, 'the Templates page with managed marks');
      } finally {
        await browser.close();
      }
    },
  );

  it('a CiAutomation applies with the transaction; its pull requests follow as a queued job; prune removes it', { timeout: 120_000 }, async () => {
    const automation = (extra: string) =>
      `apiVersion: agentplane.dev/v1\nkind: CiAutomation\nmetadata:\n  name: reviewer\nspec:\n  modeId: code-review\n  repositories: [alice/app]\n${extra}`;
    const files = (content: string) => ({ files: [{ path: 'ci.yaml', content }] });
    const pulls = async () =>
      (await gitea.api('GET', '/repos/alice/app/pulls?state=all&limit=50')).body as { number: number; title: string; merged: boolean }[];
    const jobs = async () =>
      (await api.call('GET', '/api/v0/automations/ci/jobs', { as: owner })).body.jobs as { action: string; status: string; repos: any[] }[];
    const settled = (n: number) =>
      waitFor(`${n} CI jobs settled`, async () => {
        const all = await jobs();
        return all.length === n && all.every((j) => j.status !== 'queued') && all;
      });
    expect(
      (await api.call('POST', '/api/v0/integrations/source-control', { as: owner, body: { provider: 'gitea', baseUrl: gitea.url, token: alice.token } }))
        .status,
    ).toBe(201);

    // A broken document names its path; a failure later in the apply rolls the automation and its queued job back.
    const bad = await api.call('POST', '/api/v0/config/plan', {
      as: owner,
      body: files(automation('  modeId: custom\n').replace('  modeId: code-review\n', '')),
    });
    expect(bad.status).toBe(400);
    expect(JSON.stringify(bad.body.metadata.problems)).toContain('spec.customPrompt');
    expect((await api.call('PUT', '/api/v0/config/secrets/not-a-signing-secret', { as: owner, body: { value: 'plain' } })).status).toBe(201);
    const failing = `${automation('')}---\napiVersion: agentplane.dev/v1\nkind: Webhook\nmetadata:\n  name: hook\nspec:\n  url: https://hooks.example.com/x\n  eventTypes: [config.applied]\n  secretFrom: {secret: not-a-signing-secret}\n`;
    expect((await api.call('POST', '/api/v0/config/apply', { as: owner, body: files(failing) })).status).toBe(400);
    expect(await api.db.prisma.ciAutomation.count({ where: { organizationId: api.acme.id } })).toBe(0);
    expect(await api.db.prisma.ciJob.count({ where: { organizationId: api.acme.id } })).toBe(0);
    const sent = await api.db.prisma.$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM pgboss.job WHERE name = 'automations.queued-edits'`;
    expect(Number(sent[0]!.n)).toBe(0);

    // Plan says the pull requests are pending; apply commits the automation, then the job opens the pull request.
    const plan = await api.call('POST', '/api/v0/config/plan', { as: owner, body: files(automation('')) });
    expect(plan.body.changes).toEqual([
      expect.objectContaining({ kind: 'CiAutomation', name: 'reviewer', action: 'create', pending: [expect.stringContaining('alice/app')] }),
    ]);
    const applied = await api.call('POST', '/api/v0/config/apply', { as: owner, body: files(automation('')) });
    expect(applied.status, JSON.stringify(applied.body)).toBe(200);
    const row = await api.db.prisma.ciAutomation.findFirstOrThrow({ where: { organizationId: api.acme.id, name: 'reviewer' } });
    expect(row).toMatchObject({ modeId: 'code-review', status: 'active' });
    const [created] = await settled(1);
    expect(created).toMatchObject({
      action: 'create',
      status: 'succeeded',
      repos: [expect.objectContaining({ repoFullName: 'alice/app', prUrl: expect.any(String) })],
    });
    const [pr] = await pulls();
    expect(pr!.title).toContain('reviewer');
    expect(await mergeWhenReady(gitea, 'alice/app', pr!.number, alice)).toBe(200);

    // Export, then plan: no changes. A setting changed rewrites the workflow through another pull request.
    const exported = (await api.call('GET', '/api/v0/config/export', { as: owner })).body.files as { path: string; content: string }[];
    const ci = exported.find((f) => f.path === 'ci-automation.yaml')!;
    expect(ci.content).toContain('repositories:\n    - alice/app');
    expect((await api.call('POST', '/api/v0/config/plan', { as: owner, body: { files: [ci] } })).body.hasChanges).toBe(false);
    const scheduled = automation('  params:\n    model: sonnet-test\n');
    const update = await api.call('POST', '/api/v0/config/apply', { as: owner, body: files(scheduled) });
    expect(update.body.plan.changes[0]).toMatchObject({ action: 'update', fields: [{ field: 'params', old: {}, new: { model: 'sonnet-test' } }] });
    const [edited] = await settled(2);
    expect(edited).toMatchObject({ action: 'edit', status: 'succeeded' });
    const workflowPath = created!.repos[0].filePath as string;
    const editPr = (await pulls()).find((p) => !p.merged && p.number !== pr!.number)!;
    expect(await mergeWhenReady(gitea, 'alice/app', editPr.number, alice)).toBe(200);
    const workflow = await gitea.api('GET', `/repos/alice/app/contents/${workflowPath}?ref=main`);
    expect(Buffer.from(workflow.body.content, 'base64').toString('utf8')).toContain('AGENTPLANE_MODEL: sonnet-test');

    // Removed from the documents with prune: deleted at once, its workflow removed by a pull request.
    const pruned = await api.call('POST', '/api/v0/config/apply', { as: owner, body: { files: [], prune: true } });
    expect(pruned.body.plan.changes).toEqual(expect.arrayContaining([expect.objectContaining({ kind: 'CiAutomation', action: 'delete' })]));
    expect((await api.db.prisma.ciAutomation.findUniqueOrThrow({ where: { id: row.id } })).status).toBe('deleted');
    const [removed] = await settled(3);
    expect(removed).toMatchObject({ action: 'delete', status: 'succeeded', repos: [expect.objectContaining({ filePath: workflowPath })] });
  });
  it.skipIf(skipWithout('the warm pool a push sizes', localMissing))(
    'a push that changes warmPoolSize makes the pool converge',
    { timeout: 300_000 },
    async () => {
      const pooled = (size: number) =>
        `apiVersion: agentplane.dev/v1\nkind: ComputerTemplate\nmetadata:\n  name: pooled\nspec:\n  provider: local\n  repos: []\n  warmPoolSize: ${size}\n`;
      await gitea.commitFiles(alice, REPO, { 'pool/templates.yaml': pooled(0) }, { message: 'pooled, no pool' });
      const created = await api.call('POST', '/api/v0/config/sources', { as: owner, body: { repository: repoUrl, branch: 'main', path: 'pool' } });
      expect(created.status).toBe(201);
      const { id, webhookUrl, webhookSecret } = created.body as Source & { webhookSecret: string };
      await applied(id, await head());
      const hook = { type: 'gitea', active: true, events: ['push'], config: { url: webhookUrl, content_type: 'json', secret: webhookSecret } };
      expect((await gitea.api('POST', `/repos/${REPO}/hooks`, { as: alice, body: hook })).status).toBe(201);
      const pool = async () =>
        (
          (await api.call('GET', '/api/v0/computers/pool', { as: owner })).body.pools as {
            templateId?: string;
            size: number;
            ready: number;
            provisioning: number;
          }[]
        ).find((p) => p.templateId === templateId);
      const templateId = await (async () =>
        (await api.db.prisma.computerTemplate.findFirstOrThrow({ where: { organizationId: api.acme.id, name: 'pooled' } })).id)();

      await gitea.commitFiles(alice, REPO, { 'pool/templates.yaml': pooled(1) }, { message: 'pool of 1' });
      const commit = await head();
      await applied(id, commit);
      const [revision] = (await api.call('GET', '/api/v0/config/revisions?limit=1', { as: owner })).body.revisions;
      expect(revision).toMatchObject({
        commit,
        plan: { changes: [expect.objectContaining({ name: 'pooled', pending: ['the warm pool converges to the new size'] })] },
      });
      await waitFor('the pool to hold 1 ready computer', async () => (await pool())?.ready === 1, 240_000, 500);

      // Back to 0: the pool drains.
      await gitea.commitFiles(alice, REPO, { 'pool/templates.yaml': pooled(0) }, { message: 'no pool' });
      await applied(id, await head());
      await waitFor('the pool drained', async () => (await pool()) === undefined, 240_000, 500);
    },
  );
});
