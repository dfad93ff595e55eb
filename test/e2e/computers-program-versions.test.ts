import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../src/lib/ids.ts';
import { startTestApi, type TestApi } from '../support/api.ts';
import { skipWithout } from '../support/parts.ts';
import { isRoot, sshdMissing, startSshd, type TestSshd } from '../support/sshd.ts';

// The claim replaces the key in the login user's ~/.ssh: as root the sshd logs in a user of its own.
const missing = sshdMissing() ?? (isRoot ? undefined : 'a claim rewrites the login user’s authorized_keys: run as root');
const skip = skipWithout('the program template version tests', missing);

const COMMIT = (c: string) => c.repeat(40);

/**
 * Program templates' versions on computers and in warm pools, through HTTP with the versions
 * stored as the template's tracking stores them: what a create and a claim take, what a computer
 * shows (templateVersion, updateAvailable), when POST update refuses, and the pool per version.
 * No worker runs: each answer is the request's own (the stack runs are in computers-program-roll).
 */
describe.skipIf(skip)('computers of program templates', { timeout: 60_000 }, () => {
  let api: TestApi;
  let sshd: TestSshd;
  let member: string;
  let manager: string;
  const templateId = newId('tpl');
  const v1 = newId('tplv');
  const v2 = newId('tplv');
  const broken = newId('tplv');

  beforeAll(async () => {
    api = await startTestApi('pglite');
    sshd = await startSshd({ user: 'agentplane-program-pool' });
    member = api.acme.members.user.apiKey;
    manager = api.acme.members.manager.apiKey;
    const db = api.db.prisma;
    const base = { organizationId: api.acme.id, createdBy: api.acme.members.owner.userId, programPath: 'env', programRef: 'main' };
    await db.computerTemplate.create({
      data: {
        ...base,
        id: templateId,
        name: 'env',
        liveName: 'env',
        programRepository: 'https://git.example/env.git',
        currentVersionId: v2,
        poolUpdate: 'OnReplenish',
      },
    });
    const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s));
    await db.computerTemplateVersion.createMany({
      data: [
        { id: v1, templateId, organizationId: api.acme.id, commit: COMMIT('1'), status: 'ready', createdAt: at(1) },
        { id: v2, templateId, organizationId: api.acme.id, commit: COMMIT('2'), status: 'ready', createdAt: at(2) },
        { id: broken, templateId, organizationId: api.acme.id, commit: COMMIT('3'), status: 'failed', error: 'preview failed', createdAt: at(3) },
      ],
    });
    for (const [id, name, programError] of [
      [newId('tpl'), 'unpreviewed', null],
      [newId('tpl'), 'broken', 'commit 333333333333 is not rolled out: Pulumi.yaml: runtime must be yaml'],
    ] as const) {
      await db.computerTemplate.create({ data: { ...base, id, name, liveName: name, programRepository: 'https://git.example/env.git', programError } });
    }
  });
  afterAll(async () => {
    await api?.close();
    await sshd?.stop();
  });

  const create = (name: string, body: Record<string, unknown>, as = member) => api.call('POST', '/api/v0/computers', { as, body: { name, ...body } });
  const fromTemplate = (name: string, id = templateId, as = member) => create(name, { source: { kind: 'template', templateId: id, isListed: true } }, as);
  const templateNamed = async (name: string) => (await api.db.prisma.computerTemplate.findFirstOrThrow({ where: { name } })).id;

  /** A ready pool member at `versionId`, reachable at the test sshd with the key it accepts. */
  async function poolMember(versionId: string, resources: unknown) {
    const id = newId('cmp');
    await api.db.prisma.computer.create({
      data: {
        id,
        organizationId: api.acme.id,
        ownerKind: 'pool',
        ownerId: 'pool',
        name: `pool-${id}`,
        liveName: `pool-${id}`,
        providerType: 'program',
        status: 'active',
        powerState: 'running',
        isListed: false,
        source: { kind: 'template', templateId },
        templateVersionId: versionId,
        connectionType: 'direct',
        sshHost: sshd.host,
        sshPort: sshd.port,
        remoteUser: sshd.username,
        hostKeyFingerprint: sshd.hostKeyFingerprint,
        sshPublicKey: 'ssh-ed25519 AAAA pool',
        sshKeyCiphertext: api.machines.secrets.seal(sshd.privateKey),
        resources: resources as object,
        createdBy: 'pool',
        createdAt: new Date(),
      },
    });
    return id;
  }

  it('refuses provider program without a program template (400) and a template with no passed preview (409, saying why)', async () => {
    const plain = await create('p-1', { provider: 'program' });
    expect(plain.status).toBe(400);
    expect(plain.body.detail).toMatch(/program template.*source/);
    const unpreviewed = await fromTemplate('p-2', await templateNamed('unpreviewed'));
    expect(unpreviewed.status).toBe(409);
    expect(unpreviewed.body.detail).toMatch(/no version whose preview passed yet; its preview is still running/);
    const failing = await fromTemplate('p-3', await templateNamed('broken'));
    expect(failing.status).toBe(409);
    expect(failing.body.detail).toContain('runtime must be yaml');
    const other = await create('p-4', { provider: 'local', source: { kind: 'template', templateId, isListed: true } });
    expect(other.status).toBe(400);
    expect(await api.db.prisma.computer.count({ where: { name: { startsWith: 'p-' } } })).toBe(0);
    // A pool of program computers is a template's, never a provider's plain one.
    const plainPool = await api.call('PUT', '/api/v0/computers/pool/providers/program', { as: manager, body: { warmPoolSize: 2 } });
    expect(plainPool.status).toBe(400);
    expect(plainPool.body.detail).toMatch(/template's warmPoolSize/);
  });

  it("makes a program computer at the template's current version, audited with it", async () => {
    const res = await fromTemplate('fresh');
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ providerType: 'program', status: 'provisioning', operation: 'provision', updateAvailable: false });
    expect(res.body.templateVersion).toEqual({ id: v2, commit: COMMIT('2') });
    const audit = await api.db.prisma.auditRecord.findFirstOrThrow({ where: { target: { equals: { computerId: res.body.id } } } });
    expect(audit.after).toMatchObject({ providerType: 'program', templateVersionId: v2 });
  });

  it('claims the current version first, an older one next, never a failed preview’s, and shows the pool per version', async () => {
    const { resources } = await api.db.prisma.computer.findFirstOrThrow({ where: { name: 'fresh' } });
    const failedMember = await poolMember(broken, resources);
    const oldMember = await poolMember(v1, resources);
    const currentMember = await poolMember(v2, resources);
    const pool = (await api.call('GET', '/api/v0/computers/pool', { as: manager })).body.pools.find(
      (p: { templateId?: string }) => p.templateId === templateId,
    );
    expect(pool).toMatchObject({ provider: 'program', ready: 3, provisioning: 0 });
    expect(pool.versions).toEqual([
      { versionId: v2, commit: COMMIT('2'), ready: 1, provisioning: 0 },
      { versionId: broken, commit: COMMIT('3'), ready: 1, provisioning: 0 },
      { versionId: v1, commit: COMMIT('1'), ready: 1, provisioning: 0 },
    ]);

    const first = await fromTemplate('claimed-1');
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({ id: currentMember, status: 'active', templateVersion: { id: v2 }, updateAvailable: false });
    const second = await fromTemplate('claimed-2');
    expect(second.body).toMatchObject({ id: oldMember, status: 'active', templateVersion: { id: v1, commit: COMMIT('1') }, updateAvailable: true });
    const third = await fromTemplate('claimed-3');
    expect(third.status).toBe(201);
    expect(third.body).toMatchObject({ status: 'provisioning', templateVersion: { id: v2 } });
    expect(third.body.id).not.toBe(failedMember);
    expect(await api.db.prisma.computer.findUniqueOrThrow({ where: { id: failedMember } })).toMatchObject({ ownerKind: 'pool', operation: null });
    // Lists show the version state too.
    const listed = (await api.call('GET', '/api/v0/computers', { as: member })).body.computers;
    expect(listed.find((c: { id: string }) => c.id === oldMember)).toMatchObject({ updateAvailable: true, templateVersion: { id: v1 } });
  });

  it('POST update: 409 without an update or while another operation runs, 404 for another organization, else 202 and audited', async () => {
    const current = await api.db.prisma.computer.findFirstOrThrow({ where: { name: 'claimed-1' } });
    const old = await api.db.prisma.computer.findFirstOrThrow({ where: { name: 'claimed-2' } });
    const fresh = await api.db.prisma.computer.findFirstOrThrow({ where: { name: 'fresh' } });
    const update = (id: string, as = member) => api.call('POST', `/api/v0/computers/${id}/update`, { as });

    const none = await update(current.id);
    expect(none.status).toBe(409);
    expect(none.body.detail).toMatch(/no update available: it runs its template's current version \(222222222222\)/);
    // Not another organization's, nor another member's.
    expect((await update(old.id, api.globex.members.owner.apiKey)).status).toBe(404);
    expect((await update(old.id, api.acme.members.owner.apiKey)).status).toBe(404);
    // Busy: a pause under way.
    await api.db.prisma.computer.update({ where: { id: old.id }, data: { operation: 'pause', operationDeadline: new Date(Date.now() + 60_000) } });
    const busy = await update(old.id);
    expect(busy.status).toBe(409);
    expect(busy.body.detail).toMatch(/busy: its pause is under way/);
    await api.db.prisma.computer.update({ where: { id: old.id }, data: { operation: null, operationDeadline: null } });
    // A paused machine that dials in: its update would wait for an agent that cannot answer.
    await api.db.prisma.computer.update({ where: { id: old.id }, data: { connectionType: 'agent', powerState: 'paused' } });
    const paused = await update(old.id);
    expect(paused.status).toBe(409);
    expect(paused.body.detail).toMatch(/is paused and dials in through its agent; resume it, then update it/);
    await api.db.prisma.computer.update({ where: { id: old.id }, data: { connectionType: 'direct', powerState: 'running' } });
    // Not active: still provisioning (and on the current version anyway).
    expect((await update(fresh.id)).status).toBe(409);

    const started = await update(old.id);
    expect(started.status).toBe(202);
    expect(started.body).toMatchObject({ operation: 'update', templateVersion: { id: v1 }, updateAvailable: true });
    const again = await update(old.id);
    expect(again.status).toBe(409);
    const jobs = await api.db.prisma.$queryRaw<{ data: { computerId: string; operation: string; templateVersionId: string } }[]>`
      SELECT data FROM pgboss.job WHERE name = 'computers.stack' AND data->>'computerId' = ${old.id}`;
    expect(jobs.map((j) => j.data)).toEqual([{ computerId: old.id, operation: 'update', templateVersionId: v2 }]);
    const audit = await api.db.prisma.auditRecord.findFirstOrThrow({ where: { payload: { equals: { action: 'update_started' } } } });
    expect(audit).toMatchObject({ before: { templateVersionId: v1 }, after: { templateVersionId: v2 } });
  });
});
