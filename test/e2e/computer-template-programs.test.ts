import { createHmac } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { locatePulumiToolchain } from '../../src/provisioning/pulumi/toolchain.ts';
import { ALLOW_LOOPBACK, startTestApi, type TestApi } from '../support/api.ts';
import { storeProgramComputer } from '../support/program-computers.ts';
import { chromiumMissing, launchChromium } from '../support/browser.ts';
import { expectAccessible, signInConsole } from '../support/console-page.ts';
import { giteaBinDir, giteaMissing, startGitea, type Gitea, type GiteaUser } from '../support/gitea.ts';
import { skipWithout } from '../support/parts.ts';
import { REPO_ROOT } from '../support/server-process.ts';
import { BACKENDS } from '../support/test-db.ts';
import { waitFor } from '../support/wait.ts';

const toolchain = locatePulumiToolchain();
const pulumiMissing =
  !toolchain.available || !existsSync(path.join(toolchain.binDir, 'pulumi-language-yaml'))
    ? `the Pulumi CLI, pulumi-resource-command or pulumi-language-yaml is missing under ${path.dirname(toolchain.binDir)} (bash scripts/pulumi-toolchain.sh)`
    : undefined;
const skip = skipWithout('program templates against a real Gitea and Pulumi', giteaMissing() ?? pulumiMissing);
const bin = giteaBinDir();
const backend = BACKENDS[0]!;

/** The engine's dial-in example (command provider), its description varied per commit. */
const EXAMPLE = readFileSync(path.join(REPO_ROOT, 'examples/environments/dial-in-user/Pulumi.yaml'), 'utf8');
const program = (description: string) => EXAMPLE.replace(/^description: .*$/m, `description: ${description}`);

interface Template {
  id: string;
  status?: string;
  statusMessage?: string;
  currentVersion?: { id: string; commit: string };
  candidateVersion?: { id: string; commit: string };
  webhookUrl: string;
}
interface Version {
  id: string;
  commit: string;
  status: string;
  current: boolean;
  preview: { type: string; name: string }[] | null;
  error: string | null;
  computers: { poolMembers: number; owned: number };
}

/** Templates naming a Pulumi YAML program in a Gitea repository: versions by commit, real previews, the push webhook. */
describe.skipIf(skip)(`program templates on ${backend}`, () => {
  let gitea: Gitea;
  let alice: GiteaUser;
  let api: TestApi;
  let manager: string;
  let repoUrl: string;
  const REPO = 'alice/environments';

  const head = async () => (await gitea.api('GET', `/repos/${REPO}/branches/main`)).body.commit.id as string;
  const get = async (id: string) => (await api.call('GET', `/api/v0/computer-templates/${id}`, { as: manager })).body as Template;
  const versions = async (id: string) => (await api.call('GET', `/api/v0/computer-templates/${id}/versions`, { as: manager })).body.versions as Version[];
  const settled = (id: string, what: (t: Template) => boolean, label: string) =>
    waitFor(
      () => `template ${id} ${label}`,
      async () => {
        const t = await get(id);
        return what(t) && t;
      },
      90_000,
      200,
    );
  const create = async (name: string, prog: Record<string, unknown>, extra: Record<string, unknown> = {}) => {
    const res = await api.call('POST', '/api/v0/computer-templates', {
      as: manager,
      body: { name, program: { repository: repoUrl, ref: 'main', ...prog }, ...extra },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body as Template & { webhookSecret: string };
  };
  /** The forge's push webhook, signed as Gitea signs it. */
  const push = async (t: { id: string }, secret: string, body: unknown = { ref: 'refs/heads/main' }) => {
    const raw = JSON.stringify(body);
    const res = await fetch(`${api.url}/api/v0/computer-templates/${t.id}/webhook`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gitea-signature': createHmac('sha256', secret).update(raw).digest('hex') },
      body: raw,
    });
    return { status: res.status, body: await res.json() };
  };

  beforeAll(async () => {
    gitea = await startGitea(bin!);
    alice = await gitea.createUser('alice');
    await gitea.createRepo(alice, {
      name: 'environments',
      files: {
        'dial-in/Pulumi.yaml': program('first'),
      },
    });
    // Programs agentplane refuses, each in a repository of its own.
    const refused = {
      'not-yaml': 'name: [broken\n',
      nodejs: 'name: nodejs\nruntime: nodejs\n',
      disallowed: 'name: bucket\nruntime: yaml\nresources:\n  b:\n    type: aws:s3:Bucket\n',
    };
    for (const [name, content] of Object.entries(refused)) await gitea.createRepo(alice, { name, files: { 'Pulumi.yaml': content } });
    repoUrl = `${gitea.url}/${REPO}.git`;
    api = await startTestApi(backend, { worker: true, env: ALLOW_LOOPBACK });
    manager = api.acme.members.manager.apiKey;
  }, 120_000);
  afterAll(async () => {
    await api?.close();
    await gitea?.stop();
  });

  it('a template previews its program, a pushed commit becomes the current version, a broken one is refused and says why', { timeout: 240_000 }, async () => {
    const created = await create('dial-in', { path: 'dial-in' }, { poolUpdate: { type: 'RollingUpdate', maxUnavailable: 2 } });
    expect(created).toMatchObject({
      provider: 'program',
      program: { repository: repoUrl, path: 'dial-in', ref: 'main' },
      poolUpdate: { type: 'RollingUpdate', maxUnavailable: 2 },
      registrationTimeoutSeconds: 600,
      webhookUrl: `${api.url}/api/v0/computer-templates/${created.id}/webhook`,
    });
    expect(created.webhookSecret).toMatch(/^[\w-]{32}$/);
    expect(['resolving', 'previewing']).toContain(created.status);
    // The secret is shown once and stored sealed.
    expect((await get(created.id)) as object).not.toHaveProperty('webhookSecret');
    const row = await api.db.prisma.computerTemplate.findUniqueOrThrow({ where: { id: created.id } });
    expect(row.sealedWebhookSecret).not.toContain(created.webhookSecret);

    const first = await head();
    const ready = await settled(created.id, (t) => t.status === 'ready', 'ready');
    expect(ready.currentVersion?.commit).toBe(first);
    const [v1] = await versions(created.id);
    expect(v1).toMatchObject({ commit: first, status: 'ready', current: true, error: null, computers: { poolMembers: 0, owned: 0 } });
    expect(v1!.preview).toEqual(
      expect.arrayContaining([
        { type: 'command:local:Command', name: 'user' },
        { type: 'command:local:Command', name: 'agent' },
      ]),
    );
    expect((await api.call('GET', `/api/v0/computer-templates/${created.id}/versions/${v1!.id}`, { as: api.acme.members.guest.apiKey })).body).toEqual(v1);

    // Another organization sees none of it; members read but do not write.
    const outsider = api.globex.members.owner.apiKey;
    for (const p of ['', '/versions', `/versions/${v1!.id}`]) {
      expect((await api.call('GET', `/api/v0/computer-templates/${created.id}${p}`, { as: outsider })).status).toBe(404);
    }
    const member = api.acme.members.user.apiKey;
    expect((await api.call('GET', `/api/v0/computer-templates/${created.id}/versions`, { as: member })).status).toBe(200);
    expect((await api.call('PATCH', `/api/v0/computer-templates/${created.id}`, { as: member, body: { program: null } })).status).toBe(403);

    // A webhook with a bad signature, or for a template that does not exist, changes nothing.
    expect((await push(created, 'not the secret')).status).toBe(401);
    expect((await push({ id: 'tpl_nope' }, created.webhookSecret)).status).toBe(404);
    const ignored = await push(created, created.webhookSecret, { ref: 'refs/heads/other' });
    expect(ignored.body).toMatchObject({ queued: false });

    // A new commit, announced by the push webhook, becomes the current version.
    await gitea.commitFiles(alice, REPO, { 'dial-in/Pulumi.yaml': program('second') }, { message: 'v2' });
    const second = await head();
    expect((await push(created, created.webhookSecret)).body).toEqual({ queued: true });
    const rolled = await settled(created.id, (t) => t.currentVersion?.commit === second, `at ${second}`);
    expect(rolled).toMatchObject({ status: 'ready' });
    expect(rolled.candidateVersion).toBeUndefined();
    expect((await versions(created.id)).map((v) => [v.commit, v.status, v.current])).toEqual([
      [second, 'ready', true],
      [first, 'ready', false],
    ]);

    // A broken commit is previewed, fails, and is never rolled out: the template says why.
    await gitea.commitFiles(alice, REPO, { 'dial-in/Pulumi.yaml': program('broken').replace('- ${user}', '- ${missing}') }, { message: 'broken' });
    const broken = await head();
    expect((await push(created, created.webhookSecret)).body).toEqual({ queued: true });
    const failed = await settled(created.id, (t) => t.status === 'failed', 'failed');
    expect(failed.currentVersion?.commit).toBe(second);
    expect(failed.candidateVersion?.commit).toBe(broken);
    expect(failed.statusMessage).toContain(broken.slice(0, 12));
    const [bad] = await versions(created.id);
    expect(bad).toMatchObject({ commit: broken, status: 'failed', current: false, preview: null });
    expect(bad!.error).toMatch(/missing/);
    expect(failed.statusMessage).toContain(bad!.error!.slice(0, 40));

    // Tracking again (a retry, the minute's run) finds the known commit: no second row, same result.
    expect((await push(created, created.webhookSecret)).body).toEqual({ queued: true });
    await waitFor(
      'the queue to drain',
      async () =>
        (
          await api.db.prisma.$queryRawUnsafe<{ n: number }[]>(
            `select count(*)::int as n from pgboss.job where name = 'computer-templates.track' and state in ('created', 'active', 'retry')`,
          )
        )[0]!.n === 0,
    );
    expect(await versions(created.id)).toHaveLength(3);
    expect(await api.db.prisma.computerTemplateVersion.count({ where: { templateId: created.id, commit: broken } })).toBe(1);
    expect((await get(created.id)).currentVersion?.commit).toBe(second);

    // A run killed after inserting the next commit's version, before its preview: the next run finishes that row.
    await gitea.commitFiles(alice, REPO, { 'dial-in/Pulumi.yaml': program('third') }, { message: 'fixed' });
    const third = await head();
    await api.db.prisma.computerTemplateVersion.create({
      data: { id: 'tplv_killed', templateId: created.id, organizationId: api.acme.id, commit: third, status: 'previewing' },
    });
    expect((await push(created, created.webhookSecret)).body).toEqual({ queued: true });
    const recovered = await settled(created.id, (t) => t.currentVersion?.commit === third, `at ${third}`);
    expect(recovered).toMatchObject({ status: 'ready', currentVersion: { id: 'tplv_killed', commit: third } });
    expect(recovered.statusMessage).toBeUndefined();
    const [killed] = await versions(created.id);
    expect(killed).toMatchObject({ id: 'tplv_killed', status: 'ready', current: true });
    expect(killed!.preview).toContainEqual({ type: 'command:local:Command', name: 'agent' });
    expect(await versions(created.id)).toHaveLength(4);

    // The console's template page shows the program, its status and every version with its preview.
    if (chromiumMissing()) return;
    const browser = await launchChromium();
    try {
      const page = await signInConsole(browser, api.url, api.acme.members.user.apiKey, '#/templates');
      await page.getByRole('link', { name: 'dial-in' }).click();
      await page.getByRole('heading', { level: 1, name: 'Template dial-in' }).waitFor();
      await page.getByText(repoUrl).waitFor();
      const table = page.getByRole('region', { name: 'Versions' });
      const row = (commit: string) => table.getByRole('row').filter({ has: page.getByRole('rowheader', { name: new RegExp(`^${commit.slice(0, 12)}`) }) });
      await row(third).getByText('current').waitFor();
      await row(third).getByRole('listitem').first().waitFor();
      expect(await row(third).getByRole('listitem').allTextContents()).toEqual(['command:local:Command user', 'command:local:Command agent']);
      await row(broken)
        .getByText(/missing/)
        .waitFor();
      expect(await table.getByRole('row').count()).toBe(5);
      await expectAccessible(page, 'the template page with its versions');
      await page.getByRole('heading', { name: 'Warm pool by version' }).waitFor();
      // The pool is a manager's to see (GET /computers/pool): a member is told so.
      await page.getByText('Only managers and owners see the warm pool.').waitFor();

      // A computer on an older version offers the update to the current commit, and shows how it went.
      const older = (await versions(created.id)).find((v) => v.status === 'ready' && !v.current)!;
      const computer = await storeProgramComputer(api, 'on-older', { templateId: created.id, versionId: older.id });
      // Stored without a stack (no public key): its update fails at once, and going back too.
      await api.db.prisma.computer.update({
        where: { id: computer },
        data: { status: 'active', operation: null, operationDeadline: null, sshPublicKey: null },
      });
      await page.goto(`${api.url}/#/computers/${computer}`);
      await page.getByTestId('template-version').getByText(older.commit.slice(0, 12)).waitFor();
      await page.getByRole('button', { name: `Update to ${third.slice(0, 12)}` }).click();
      await page.getByText(`Update to ${third.slice(0, 12)} started.`).waitFor();
      await page
        .getByTestId('operation-error')
        .getByText(`updating to commit ${third.slice(0, 12)} failed`)
        .waitFor();
      const after = (await api.call('GET', `/api/v0/computers/${computer}`, { as: api.acme.members.user.apiKey })).body;
      expect(after).toMatchObject({ templateVersion: { commit: older.commit }, updateAvailable: true });
      await expectAccessible(page, 'the computer page with its version and a failed update');

      // A manager sees the template's pool per version: the current one first (none yet), a member of the older one.
      // The member is being handed out (a claim): the minute's convergence leaves such a member alone.
      const member = await storeProgramComputer(api, 'pool-older', { templateId: created.id, versionId: older.id });
      await api.db.prisma.computer.update({
        where: { id: member },
        data: { ownerKind: 'pool', ownerId: 'pool', status: 'active', operation: 'claim', operationDeadline: new Date(Date.now() + 3_600_000) },
      });
      try {
        const managerPage = await signInConsole(browser, api.url, api.acme.members.manager.apiKey, `#/templates/${created.id}`);
        const region = managerPage.getByRole('region', { name: 'Warm pool by version' });
        await managerPage.getByText('Size 0: 0 ready, 1 provisioning, 0 failed.').waitFor();
        const rows = await region.getByRole('row').allTextContents();
        expect(rows.slice(1)).toEqual([`${third.slice(0, 12)}00`, `${older.commit.slice(0, 12)}01`]);
        await expectAccessible(managerPage, 'the template page with its pool per version');
      } finally {
        // Stored members without stacks: gone before a convergence could try them.
        await api.db.prisma.computer.update({ where: { id: member }, data: { deletedAt: new Date(), liveName: null, operation: null } });
      }
    } finally {
      await browser.close();
    }
  });

  it('a repository, path or ref that does not exist, or a program agentplane cannot run, is a clear status; bad bodies are 400', {
    timeout: 240_000,
  }, async () => {
    const cases: [string, Record<string, unknown>, RegExp][] = [
      ['no-ref', { path: 'dial-in', ref: 'no-such-branch' }, /no-such-branch/],
      ['no-repo', { repository: `${gitea.url}/alice/missing.git`, path: 'dial-in' }, /missing\.git cannot be/],
      ['no-path', { path: 'nowhere' }, /nowhere/],
      ['not-yaml', { repository: `${gitea.url}/alice/not-yaml.git` }, /not valid YAML/],
      ['nodejs', { repository: `${gitea.url}/alice/nodejs.git` }, /runtime is "nodejs"/],
      ['aws', { repository: `${gitea.url}/alice/disallowed.git` }, /provider "aws", which the operator does not allow/],
    ];
    const made = await Promise.all(cases.map(async ([name, prog]) => (await create(name, prog)).id));
    for (const [i, [name, , reason]] of cases.entries()) {
      const t = await settled(made[i]!, (x) => x.status === 'failed', `${name} failed`);
      expect(t.statusMessage, name).toMatch(reason);
      expect(t.currentVersion, name).toBeUndefined();
    }

    const as = manager;
    for (const bad of [
      { name: 'both', provider: 'local', program: { repository: repoUrl, ref: 'main' } },
      { name: 'dotdot', program: { repository: repoUrl, path: '../etc', ref: 'main' } },
      { name: 'abs', program: { repository: repoUrl, path: '/etc', ref: 'main' } },
      { name: 'badref', program: { repository: repoUrl, ref: 'a..b' } },
      { name: 'badurl', program: { repository: 'not a url', ref: 'main' } },
      { name: 'helper', program: { repository: 'ext::sh -c id', ref: 'main' } },
      { name: 'pool', poolUpdate: { type: 'RollingUpdate', maxUnavailable: 0 } },
      { name: 'timeout', registrationTimeoutSeconds: 5 },
    ]) {
      const res = await api.call('POST', '/api/v0/computer-templates', { as, body: bad });
      expect(res.status, bad.name).toBe(400);
    }
    const both = await api.call('POST', '/api/v0/computer-templates', {
      as,
      body: { name: 'both', provider: 'local', program: { repository: repoUrl, ref: 'main' } },
    });
    expect(both.body.detail).toMatch(/program has no provider/);
    // Tenant URLs pass the egress guard: the link-local metadata address is refused.
    const metadata = await api.call('POST', '/api/v0/computer-templates', {
      as,
      body: { name: 'md', program: { repository: 'http://169.254.169.254/x.git', ref: 'main' } },
    });
    expect(metadata.status).toBe(400);
    expect(await api.db.prisma.computerTemplate.count({ where: { name: { in: ['both', 'md', 'dotdot'] } } })).toBe(0);
    // Members cannot make templates.
    expect(
      (
        await api.call('POST', '/api/v0/computer-templates', {
          as: api.acme.members.user.apiKey,
          body: { name: 'm', program: { repository: repoUrl, ref: 'main' } },
        })
      ).status,
    ).toBe(403);

    // Fixing the ref of a failed template tracks the new one; removing the program clears it all.
    const fixed = await api.call('PATCH', `/api/v0/computer-templates/${made[0]}`, {
      as,
      body: { program: { repository: repoUrl, path: 'dial-in', ref: 'main' } },
    });
    expect(fixed.status).toBe(200);
    expect(fixed.body.statusMessage ?? '').not.toMatch(/no-such-branch/);
    await settled(made[0]!, (t) => t.status === 'ready', 'ready after the fix');
    const cleared = await api.call('PATCH', `/api/v0/computer-templates/${made[0]}`, { as, body: { program: null, provider: 'local' } });
    expect(cleared.body).toMatchObject({ provider: 'local' });
    expect(cleared.body.program).toBeUndefined();
    expect(cleared.body.status).toBeUndefined();
    expect(await versions(made[0]!)).toEqual([]);
  });
  it('platform as code declares a program and its pool roll; re-applying changes nothing, an edit outside config is drift', { timeout: 120_000 }, async () => {
    const owner = api.acme.members.owner.apiKey;
    const doc = (ref: string, roll: string) => ({
      path: 'config/programs.yaml',
      content: [
        'apiVersion: agentplane.dev/v1',
        'kind: ComputerTemplate',
        'metadata:',
        '  name: declared',
        'spec:',
        '  program:',
        `    repository: ${repoUrl}`,
        '    path: ./dial-in/',
        `    ref: ${ref}`,
        '  poolUpdate:',
        `    type: ${roll}`,
        '',
      ].join('\n'),
    });
    const applied = await api.call('POST', '/api/v0/config/apply', { as: owner, body: { files: [doc('main', 'Recreate')] } });
    expect(applied.status, JSON.stringify(applied.body)).toBe(200);
    const created = applied.body.plan.changes.find((c: { name: string }) => c.name === 'declared');
    expect(created).toMatchObject({ action: 'create' });
    expect(created.pending).toContainEqual(expect.stringContaining('previewed'));
    const id = ((await api.call('GET', '/api/v0/computer-templates', { as: owner })).body.templates as Template[] & { name: string }[]).find(
      (t) => (t as unknown as { name: string }).name === 'declared',
    )!.id;
    expect(await get(id)).toMatchObject({ program: { repository: repoUrl, path: 'dial-in', ref: 'main' }, poolUpdate: { type: 'Recreate' } });
    await settled(id, (t) => t.status === 'ready', 'ready');

    const again = await api.call('POST', '/api/v0/config/plan', { as: owner, body: { files: [doc('main', 'Recreate')] } });
    expect(again.body.changes.find((c: { name: string }) => c.name === 'declared')).toMatchObject({ action: 'unchanged' });
    const moved = await api.call('POST', '/api/v0/config/plan', { as: owner, body: { files: [doc('v2', 'OnReplenish')] } });
    const update = moved.body.changes.find((c: { name: string }) => c.name === 'declared');
    expect(update.action).toBe('update');
    expect(update.fields.map((f: { field: string }) => f.field).sort()).toEqual(['poolUpdate', 'program']);

    // A change made outside config shows as drift of the managed template.
    expect(
      (await api.call('PATCH', `/api/v0/computer-templates/${id}`, { as: owner, body: { poolUpdate: { type: 'RollingUpdate', maxUnavailable: 3 } } })).status,
    ).toBe(200);
    const drifted = await api.call('POST', '/api/v0/config/plan', { as: owner, body: { files: [doc('main', 'Recreate')] } });
    expect(drifted.body.changes.find((c: { name: string }) => c.name === 'declared')).toMatchObject({
      action: 'update',
      fields: [{ field: 'poolUpdate', old: { type: 'RollingUpdate', maxUnavailable: 3 }, new: { type: 'Recreate' } }],
    });

    // A declared template's apply shows no webhook secret: a manager replaces it to learn one, and
    // the one before stops verifying at once.
    const rotate = (templateId: string, as = owner) => api.call('POST', `/api/v0/computer-templates/${templateId}/webhook-secret`, { as });
    const first = await rotate(id);
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ id, webhookUrl: `${api.url}/api/v0/computer-templates/${id}/webhook` });
    expect(first.body.webhookSecret).toMatch(/^[\w-]{32}$/);
    expect((await push({ id }, first.body.webhookSecret)).body).toEqual({ queued: true });
    const second = await rotate(id);
    expect(second.body.webhookSecret).not.toBe(first.body.webhookSecret);
    expect((await push({ id }, first.body.webhookSecret)).status).toBe(401);
    expect((await push({ id }, second.body.webhookSecret)).body).toEqual({ queued: true });
    expect((await get(id)) as object).not.toHaveProperty('webhookSecret');
    const audits = await api.db.prisma.auditRecord.findMany({ where: { organizationId: api.acme.id, eventType: 'computer_template_change' } });
    expect(audits.filter((a) => (a.payload as { action?: string }).action === 'webhook_secret_rotated')).toHaveLength(2);
    // Members may not, another organization sees no such template, and a template without a program has no webhook.
    expect((await rotate(id, api.acme.members.user.apiKey)).status).toBe(403);
    expect((await rotate(id, api.globex.members.owner.apiKey)).status).toBe(404);
    const plain = await api.call('POST', '/api/v0/computer-templates', { as: owner, body: { name: 'no-program', provider: 'local' } });
    const refused = await rotate(plain.body.id);
    expect(refused.status).toBe(409);
    expect(refused.body.detail).toContain('no program');
    expect((await push({ id }, second.body.webhookSecret)).body).toEqual({ queued: true });
  });
});
