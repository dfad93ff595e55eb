import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../support/api.ts';
import { CLI } from '../support/server-process.ts';
import { BACKENDS } from '../support/test-db.ts';

const doc = (kind: string, name: string, spec: string) =>
  `apiVersion: agentplane.dev/v1\nkind: ${kind}\nmetadata:\n  name: ${name}\nspec:\n${spec
    .trim()
    .split('\n')
    .map((l) => `  ${l}`)
    .join('\n')}\n`;

const TEMPLATES = [
  doc('ComputerTemplate', 'web', 'provider: local\nrepos: [https://git.example.test/acme/web.git]\nwarmPoolSize: 2'),
  doc('ComputerTemplate', 'batch', 'autoInstallDeps: true\nsetupScript: echo hi'),
].join('---\n');
const ACCESS = [
  doc('ServiceAccount', 'deployer', 'description: ships releases'),
  doc('Member', 'alice', 'email: Alice@acme.test\nrole: manager'),
  doc('CreditLimits', 'limits', 'limit: 5000000\nusers:\n  - {email: alice@acme.test, limit: 2000000}'),
  doc('ProviderPool', 'local', 'warmPoolSize: 1'),
].join('---\n');
const HOOK = doc(
  'Webhook',
  'alerts',
  'url: https://hooks.example.test/agentplane\neventTypes: [config.applied, computer.error]\nsecretFrom: {secret: hook-secret}',
);

describe.each(BACKENDS)('platform as code on %s', (backend) => {
  let api: TestApi;
  let owner: string;
  let manager: string;
  const files = (extra: { path: string; content: string }[] = []) => [
    { path: 'config/templates.yaml', content: TEMPLATES },
    { path: 'config/access.yaml', content: ACCESS },
    { path: 'config/hooks.yaml', content: HOOK },
    ...extra,
  ];
  const revisions = async () => (await api.call('GET', '/api/v0/config/revisions', { as: owner })).body.revisions as { number: number }[];
  const templates = async () => (await api.call('GET', '/api/v0/computer-templates', { as: owner })).body.templates as { name: string; warmPoolSize: number }[];

  beforeAll(async () => {
    // The local provider is offered (its pools may be sized) but no worker provisions anything.
    api = await startTestApi(backend, { env: { AGENTPLANE_LOCAL_PROVIDER: 'true' } });
    owner = api.acme.members.owner.apiKey;
    manager = api.acme.members.manager.apiKey;
  });
  afterAll(() => api?.close());

  it('secrets are write-only, per organization, managers and owners only', async () => {
    const put = await api.call('PUT', '/api/v0/config/secrets/hook-secret', {
      as: manager,
      body: { value: 'whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LTMyYnk=' },
    });
    expect(put.status).toBe(201);
    expect(put.body).toEqual({ name: 'hook-secret', createdAt: expect.any(Number), updatedAt: expect.any(Number) });
    expect(
      (await api.call('PUT', '/api/v0/config/secrets/hook-secret', { as: owner, body: { value: 'whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LTMyYnk=' } }))
        .status,
    ).toBe(200);
    const listed = await api.call('GET', '/api/v0/config/secrets', { as: owner });
    expect(listed.body.secrets).toEqual([{ name: 'hook-secret', createdAt: expect.any(Number), updatedAt: expect.any(Number) }]);
    expect(JSON.stringify(listed.body)).not.toContain('whsec_');
    const row = await api.db.prisma.configSecret.findFirstOrThrow({ where: { organizationId: api.acme.id } });
    expect(row.sealedValue).not.toContain('whsec_');
    for (const as of [api.acme.members.user.apiKey, api.acme.members.guest.apiKey, api.acme.serviceAccount.apiKey]) {
      expect((await api.call('PUT', '/api/v0/config/secrets/x', { as, body: { value: 'v' } })).status).toBe(403);
      expect((await api.call('GET', '/api/v0/config/secrets', { as })).status).toBe(403);
    }
    expect((await api.call('GET', '/api/v0/config/secrets', { as: api.globex.members.owner.apiKey })).body.secrets).toEqual([]);
    expect((await api.call('PUT', '/api/v0/config/secrets/Bad Name', { as: owner, body: { value: 'v' } })).status).toBe(400);
  });

  it('plans without changing anything, then applies everything in one revision', async () => {
    const plan = await api.call('POST', '/api/v0/config/plan', { as: manager, body: { files: files() } });
    expect(plan.status, JSON.stringify(plan.body)).toBe(200);
    expect(plan.body.summary).toEqual({ create: 7, update: 0, delete: 0, unchanged: 0 });
    expect(plan.body.hasChanges).toBe(true);
    const web = plan.body.changes.find((c: { name: string }) => c.name === 'web');
    expect(web).toMatchObject({ kind: 'ComputerTemplate', action: 'create', file: 'config/templates.yaml', pending: [expect.stringContaining('warm pool')] });
    expect(web.fields).toContainEqual({ field: 'warmPoolSize', new: 2 });
    // The webhook's secret shows by name only.
    expect(JSON.stringify(plan.body)).not.toContain('whsec_');
    expect(await templates()).toEqual([]);
    expect(await revisions()).toEqual([]);

    const applied = await api.call('POST', '/api/v0/config/apply', { as: owner, body: { files: files() } });
    expect(applied.status, JSON.stringify(applied.body)).toBe(200);
    expect(applied.body.revision).toMatchObject({ number: 1, source: 'api', commit: null, actor: { kind: 'human', id: api.acme.members.owner.userId } });
    expect((await templates()).map((t) => [t.name, t.warmPoolSize]).sort()).toEqual([
      ['batch', 0],
      ['web', 2],
    ]);
    const accounts = await api.call('GET', '/api/v0/service-accounts', { as: owner });
    expect(accounts.body.serviceAccounts.find((a: { name: string }) => a.name === 'deployer')).toMatchObject({
      description: 'ships releases',
      status: 'active',
    });
    const limits = await api.call('GET', '/api/v0/organization/usage/limits/users', { as: owner });
    expect(limits.body).toEqual({ globalLimit: 5_000_000, userLimits: [{ email: 'alice@acme.test', limit: 2_000_000 }] });
    // Side effects follow as through the API: the warm pools' convergence was sent with the change.
    const converge = await api.db.prisma.$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM pgboss.job WHERE name = 'computers.pool-converge'`;
    expect(Number(converge[0]!.n)).toBeGreaterThan(0);
    const pools = await api.call('GET', '/api/v0/computers/pool', { as: owner });
    expect(pools.body.pools).toContainEqual(expect.objectContaining({ provider: 'local', size: 1 }));
    const hooks = await api.call('GET', '/api/v0/webhooks', { as: owner });
    expect(hooks.body.webhooks).toEqual([expect.objectContaining({ url: 'https://hooks.example.test/agentplane', status: 'enabled' })]);
    // The webhook signs with the declared secret.
    const endpoint = await api.db.prisma.webhookEndpoint.findFirstOrThrow({ where: { organizationId: api.acme.id } });
    expect(endpoint.sealedSecret).not.toContain('whsec_');
    // One audit record per changed object, by the modules' own operations, and everything marked managed.
    const audits = await api.db.prisma.auditRecord.findMany({
      where: { organizationId: api.acme.id, eventType: { in: ['computer_template_change', 'webhook_change'] } },
    });
    expect(audits).toHaveLength(3);
    const managed = await api.db.prisma.configResource.findMany({ where: { organizationId: api.acme.id } });
    expect(managed.map((m) => `${m.kind}/${m.name}`).sort()).toEqual([
      'ComputerTemplate/batch',
      'ComputerTemplate/web',
      'CreditLimits/organization',
      'Member/alice@acme.test',
      'ProviderPool/local',
      'ServiceAccount/deployer',
      'Webhook/https://hooks.example.test/agentplane',
    ]);
    expect(managed.every((m) => m.managedBy === 'api')).toBe(true);
    // The apply is announced on the organization's event stream (and so to webhooks).
    const event = await api.db.prisma.event.findFirst({ where: { organizationId: api.acme.id, type: 'config.applied' } });
    expect(event?.data).toMatchObject({ number: 1 });

    // Applying the same documents again changes nothing and records no revision.
    const again = await api.call('POST', '/api/v0/config/apply', { as: owner, body: { files: files() } });
    expect(again.body).toMatchObject({ revision: null, plan: { hasChanges: false, summary: { unchanged: 7 } } });
    expect(await revisions()).toHaveLength(1);
  });

  it('an update shows each changed field with its old and new value', async () => {
    const changed = files().map((f) => (f.path === 'config/templates.yaml' ? { ...f, content: f.content.replace('warmPoolSize: 2', 'warmPoolSize: 3') } : f));
    const plan = await api.call('POST', '/api/v0/config/plan', { as: manager, body: { files: changed } });
    expect(plan.body.summary).toEqual({ create: 0, update: 1, delete: 0, unchanged: 6 });
    expect(plan.body.changes.find((c: { action: string }) => c.action === 'update')).toMatchObject({
      kind: 'ComputerTemplate',
      name: 'web',
      fields: [{ field: 'warmPoolSize', old: 2, new: 3 }],
    });
    const applied = await api.call('POST', '/api/v0/config/apply', { as: manager, body: { files: changed } });
    expect(applied.body.revision.number).toBe(2);
    expect((await templates()).find((t) => t.name === 'web')?.warmPoolSize).toBe(3);
    const got = await api.call('GET', `/api/v0/config/revisions/${applied.body.revision.id}`, { as: owner });
    expect(got.body.plan.summary.update).toBe(1);
    expect((await api.call('GET', `/api/v0/config/revisions/${applied.body.revision.id}`, { as: api.globex.members.owner.apiKey })).status).toBe(404);
    expect((await api.call('GET', '/api/v0/config/revisions', { as: api.globex.members.owner.apiKey })).body.revisions).toEqual([]);
    const paged = await api.call('GET', '/api/v0/config/revisions?limit=1', { as: owner });
    expect(paged.body.revisions.map((r: { number: number }) => r.number)).toEqual([2]);
    const next = await api.call('GET', `/api/v0/config/revisions?limit=1&cursor=${paged.body.pagination.nextCursor}`, { as: owner });
    expect(next.body.revisions.map((r: { number: number }) => r.number)).toEqual([1]);
  });

  it('bad input gets a clear answer naming where, and changes nothing', async () => {
    const before = await revisions();
    const cases: [{ path: string; content: string }, RegExp, Record<string, unknown>][] = [
      [
        { path: 'bad/syntax.yaml', content: doc('ComputerTemplate', 'x', 'repos: [a, b') },
        /bad\/syntax\.yaml:\d+:\d+.*YAML syntax error/,
        { file: 'bad/syntax.yaml' },
      ],
      [
        { path: 'bad/kind.yaml', content: doc('Computer', 'x', 'name: y') },
        /unknown kind "Computer"/,
        { file: 'bad/kind.yaml', path: 'kind', line: 2, column: 1 },
      ],
      [
        { path: 'bad/field.yaml', content: doc('ComputerTemplate', 'x', 'repos: []\nwarmPoolSise: 2') },
        /bad\/field\.yaml:7:3 ComputerTemplate\/x spec\.warmPoolSise: unknown field "warmPoolSise"/,
        { line: 7, column: 3, path: 'spec.warmPoolSise' },
      ],
      [
        { path: 'bad/value.yaml', content: doc('ProviderPool', 'local', 'warmPoolSize: -1') },
        /spec\.warmPoolSize: warmPoolSize must be at least 0/,
        { line: 6 },
      ],
      [
        { path: 'bad/secret.yaml', content: doc('Webhook', 'w', 'url: https://x.example.test/\neventTypes: [config.failed]\nsecretFrom: {secret: missing}') },
        /bad\/secret\.yaml:8:\d+ Webhook\/w spec\.secretFrom\.secret: names secret "missing", which does not exist/,
        { path: 'spec.secretFrom.secret' },
      ],
      [
        { path: 'bad/member.yaml', content: doc('CreditLimits', 'limits', 'users:\n  - {email: nobody@acme.test, limit: 2000000}') },
        /CreditLimits\/limits spec\.users\.0\.email: names nobody@acme\.test, who is not a member/,
        { path: 'spec.users.0.email' },
      ],
      [{ path: 'bad/provider.yaml', content: doc('ProviderPool', 'mars', 'warmPoolSize: 1') }, /names provider "mars"/, { path: 'metadata.name' }],
      [
        { path: 'bad/twice.yaml', content: doc('ComputerTemplate', 'web', 'repos: []') },
        /declares the same object as ComputerTemplate\/web in config\/templates\.yaml:1/,
        {},
      ],
    ];
    for (const [file, detail, problem] of cases) {
      for (const op of ['plan', 'apply']) {
        const res = await api.call('POST', `/api/v0/config/${op}`, { as: owner, body: { files: files([file]) } });
        expect(res.status, `${file.path} ${JSON.stringify(res.body)}`).toBe(400);
        expect(res.body.detail).toMatch(detail);
        expect(res.body.metadata.problems).toContainEqual(expect.objectContaining(problem));
      }
    }
    expect(await revisions()).toEqual(before);
  });

  it('all or nothing: an operation refused midway leaves no change behind', async () => {
    const before = await revisions();
    // A manager may create the template but not grant the owner role: the Member change comes later and fails.
    const extra = [
      { path: 'more.yaml', content: [doc('ComputerTemplate', 'late', 'repos: []'), doc('Member', 'boss', 'email: boss@acme.test\nrole: owner')].join('---\n') },
    ];
    const res = await api.call('POST', '/api/v0/config/apply', { as: manager, body: { files: files(extra) } });
    expect(res.status).toBe(403);
    expect(res.body.detail).toMatch(/Nothing was changed; Member\/boss \(more\.yaml\) cannot be created: Only an owner may grant the owner role/);
    expect((await templates()).map((t) => t.name)).not.toContain('late');
    expect(await api.db.prisma.user.findUnique({ where: { email: 'boss@acme.test' } })).toBeNull();
    expect(await revisions()).toEqual(before);
    // Service-account changes need a human manager: the check runs before anything is applied.
    const sa = doc('ServiceAccount', 'robot-2', 'status: active');
    const bySa = await api.call('POST', '/api/v0/config/apply', { as: api.acme.serviceAccount.apiKey, body: { files: [{ path: 'sa.yaml', content: sa }] } });
    expect(bySa.status).toBe(403);
  });

  it('members, guests and service accounts cannot plan or apply; other organizations see none of it', async () => {
    for (const as of [api.acme.members.user.apiKey, api.acme.members.guest.apiKey, api.acme.serviceAccount.apiKey]) {
      for (const op of ['plan', 'apply']) expect((await api.call('POST', `/api/v0/config/${op}`, { as, body: { files: files() } })).status).toBe(403);
      expect((await api.call('GET', '/api/v0/config/revisions', { as })).status).toBe(403);
    }
    // Globex plans against its own organization: everything would be created, and its secret reference dangles.
    const other = await api.call('POST', '/api/v0/config/plan', { as: api.globex.members.owner.apiKey, body: { files: files() } });
    expect(other.status).toBe(400);
    expect(other.body.detail).toContain('names secret "hook-secret", which does not exist');
  });

  it('prune deletes only what config manages, and only when asked', async () => {
    await api.call('POST', '/api/v0/computer-templates', { as: owner, body: { name: 'hand-made' } });
    const withoutBatch = files().map((f) =>
      f.path === 'config/templates.yaml' ? { ...f, content: f.content.split('---\n')[0]!.replace('warmPoolSize: 2', 'warmPoolSize: 3') } : f,
    );
    const kept = await api.call('POST', '/api/v0/config/plan', { as: owner, body: { files: withoutBatch } });
    expect(kept.body.hasChanges).toBe(false);
    const pruning = await api.call('POST', '/api/v0/config/plan', { as: owner, body: { files: withoutBatch, prune: true } });
    expect(pruning.body.changes.filter((c: { action: string }) => c.action === 'delete')).toEqual([
      expect.objectContaining({ kind: 'ComputerTemplate', name: 'batch' }),
    ]);
    const applied = await api.call('POST', '/api/v0/config/apply', { as: owner, body: { files: withoutBatch, prune: true } });
    expect(applied.status).toBe(200);
    expect((await templates()).map((t) => t.name).sort()).toEqual(['hand-made', 'web']);
    expect(await api.db.prisma.configResource.findFirst({ where: { organizationId: api.acme.id, name: 'batch' } })).toBeNull();
  });

  it('export then plan is a plan with no changes; the schema describes every kind', async () => {
    const exported = await api.call('GET', '/api/v0/config/export', { as: owner });
    expect(exported.status).toBe(200);
    expect(exported.body.files.map((f: { path: string }) => f.path)).toContain('computer-template.yaml');
    const plan = await api.call('POST', '/api/v0/config/plan', { as: owner, body: { files: exported.body.files } });
    expect(plan.status, JSON.stringify(plan.body)).toBe(200);
    expect(plan.body.hasChanges, JSON.stringify(plan.body.changes.filter((c: { action: string }) => c.action !== 'unchanged'))).toBe(false);
    expect(plan.body.changes.find((c: { name: string }) => c.name === 'hand-made')).toMatchObject({ action: 'unchanged', adopt: true });

    const schema = await api.call('GET', '/api/v0/config/schema.json');
    expect(schema.status).toBe(200);
    const kinds = JSON.stringify(schema.body);
    for (const kind of [
      'ComputerTemplate',
      'ProviderPool',
      'ServiceAccount',
      'Member',
      'CreditLimits',
      'EnterpriseControls',
      'SourceControlIntegration',
      'Webhook',
    ]) {
      expect(kinds).toContain(`"${kind}"`);
    }
    expect(kinds).toContain('warmPoolSize');
  });

  // The command line talks HTTP only: one database is enough.
  it.runIf(backend === 'pglite')(
    'agentplane config export, diff and apply: diff exits 0 without changes, 2 with, 1 on error',
    { timeout: 60_000 },
    async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentplane-config-'));
      try {
        // A pipeline's script: the exit status of each step, as a shell sees it.
        const script = `
        set -u
        cli() { "${process.execPath}" "${CLI}" "$@"; }
        cli config export --out exported >/dev/null 2>&1; echo "export=$?"
        cli config diff -f exported >/dev/null; echo "diff-exported=$?"
        sed -i 's/warmPoolSize: 3/warmPoolSize: 4/' exported/computer-template.yaml
        cli config diff -f exported > plan.txt; echo "diff-changed=$?"
        cli config apply -f exported > applied.txt; echo "apply=$?"
        cli config diff -f exported >/dev/null; echo "diff-applied=$?"
        printf 'apiVersion: agentplane.dev/v1\nkind: ComputerTemplate\nmetadata: {name: broken\n' > exported/broken.yaml
        cli config diff -f exported 2> error.txt; echo "diff-broken=$?"
      `;
        const { stdout } = await promisify(execFile)('bash', ['-c', script], {
          cwd: dir,
          env: { ...process.env, AGENTPLANE_URL: api.url, AGENTPLANE_API_KEY: owner },
        });
        expect(stdout.trim().split('\n')).toEqual(['export=0', 'diff-exported=0', 'diff-changed=2', 'apply=0', 'diff-applied=0', 'diff-broken=1']);
        const plan = fs.readFileSync(path.join(dir, 'plan.txt'), 'utf8');
        expect(plan).toContain('~ ComputerTemplate/web  exported/computer-template.yaml');
        expect(plan).toContain('    warmPoolSize: 3 -> 4');
        expect(plan).toMatch(/Plan: 0 to create, 1 to update, 0 to delete, \d+ unchanged\./);
        expect(fs.readFileSync(path.join(dir, 'applied.txt'), 'utf8')).toMatch(/Applied: revision \d+\./);
        expect(fs.readFileSync(path.join(dir, 'error.txt'), 'utf8')).toMatch(/exported\/broken\.yaml:\d+:\d+: YAML syntax error/);
        expect((await templates()).find((t) => t.name === 'web')?.warmPoolSize).toBe(4);
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});
