import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { poolConvergeJob } from '../../src/modules/computers/pool/job-kinds.ts';
import { defaultLocalRoot } from '../../src/provisioning/providers/local/names.ts';
import { createSshClient, SshError, type SshTarget } from '../../src/ssh/index.ts';
import { startTestApi, type TestApi } from '../support/api.ts';
import { postgresUrl } from '../support/databases.ts';
import {
  cgroupDirs,
  hostTraces,
  killSandbox,
  localComputerNames,
  localProviderMissing,
  removeLocalComputer,
  startGitDaemon,
  type GitDaemon,
} from '../support/local-computers.ts';
import { startServerProcess, type ServerProcess } from '../support/server-process.ts';
import { waitFor } from '../support/wait.ts';
import { skipWithout } from '../support/parts.ts';
import { seedDataDir } from '../support/pglite-template.ts';

const missing = await localProviderMissing();
const skip = skipWithout('the warm pool e2e tests', missing);

const PROVISION_MS = 120_000;
const ENV = { AGENTPLANE_LOCAL_PROVIDER: 'true', AGENTPLANE_COMPUTER_CPUS: '0.5', AGENTPLANE_COMPUTER_MEMORY_MIB: '256' };

interface Pool {
  provider: string;
  templateId?: string;
  size: number;
  ready: number;
  provisioning: number;
  failed: number;
}

/**
 * Warm pools through HTTP on the local provider with the real Pulumi CLI: filled by the
 * convergence job, claimed by POST /computers (and bulk) with the claimant's own key, invisible to
 * everyone until claimed. On PostgreSQL when the run has it, so concurrent claims really race.
 */
describe.skipIf(skip)('warm pools on the local provider', { timeout: 300_000 }, () => {
  let api: TestApi;
  let git: GitDaemon;
  let manager: string;
  let member: string;
  const fresh = createSshClient();

  beforeAll(async () => {
    if (missing) throw new Error(missing);
    // The daemon first: computers reach a port of the host only when the server's AGENTPLANE_LOCAL_ALLOW names it.
    git = await startGitDaemon({ app: { 'README.md': '# app\n' }, other: { 'README.md': '# other\n' } });
    api = await startTestApi(postgresUrl() ? 'postgres' : 'pglite', { worker: true, env: { ...ENV, AGENTPLANE_LOCAL_ALLOW: String(git.port) } });
    manager = api.acme.members.manager.apiKey;
    member = api.acme.members.user.apiKey;
  });
  afterAll(async () => {
    await fresh.close();
    // Every computer left is deleted and its teardown waited for: none stays on the host.
    if (api) {
      await api.db.prisma.computerTemplate.updateMany({ data: { warmPoolSize: 0 } });
      await api.db.prisma.organization.updateMany({ data: { warmPoolDefaults: {} } });
      const live = await api.db.prisma.computer.findMany({ where: { deletedAt: null, ownerKind: { not: 'pool' } } });
      await Promise.all(live.map((c) => api.call('DELETE', `/api/v0/computers/${c.id}`, { as: api.acme.members.owner.apiKey })));
      await api.queue.send(poolConvergeJob, { organizationId: api.acme.id });
      await waitFor(
        'every teardown to finish',
        async () => {
          const left = await api.db.prisma.computer.count({ where: { OR: [{ deletedAt: null }, { operation: 'teardown' }] } });
          return left === 0;
        },
        240_000,
        250,
      ).catch((err: unknown) => console.error(err));
      for (const { id } of await api.db.prisma.computer.findMany({ select: { id: true } })) {
        if (hostTraces(api.dataDir, id).length > 0) removeLocalComputer(api.dataDir, id);
      }
    }
    await api?.close();
    await git?.stop();
  }, 300_000);

  const pools = async (as = manager): Promise<Pool[]> => (await api.call('GET', '/api/v0/computers/pool', { as })).body.pools;
  const poolOf = async (templateId?: string) => (await pools()).find((p) => p.provider === 'local' && p.templateId === templateId);
  const converge = (healthCheck = false) => api.queue.send(poolConvergeJob, { organizationId: api.acme.id, healthCheck });
  /** Waits until the pool holds `ready` ready computers and nothing provisioning. */
  const poolReady = (ready: number, templateId?: string) =>
    waitFor(
      `the pool to hold ${ready} ready computers`,
      async () => {
        const p = await poolOf(templateId);
        return p && p.ready === ready && p.provisioning === 0 && p.failed === 0 && p;
      },
      PROVISION_MS,
      250,
    );
  /** The live computers of the provider's pool, or of a template's. */
  const poolRows = async (templateId?: string) =>
    (await api.db.prisma.computer.findMany({ where: { ownerKind: 'pool', deletedAt: null }, orderBy: { createdAt: 'asc' } })).filter(
      (c) => (c.source as { templateId?: string } | null)?.templateId === templateId,
    );
  const setSize = (size: number) => api.call('PUT', '/api/v0/computers/pool/providers/local', { as: manager, body: { warmPoolSize: size } });
  const create = (name: string, body: Record<string, unknown> = {}, as = member) =>
    api.call('POST', '/api/v0/computers', { as, body: { name, provider: 'local', ...body } });
  const settled = (id: string, as = member) =>
    waitFor(
      `computer ${id} to leave provisioning`,
      async () => {
        const c = (await api.call('GET', `/api/v0/computers/${id}`, { as })).body;
        return c.status !== 'provisioning' && c;
      },
      PROVISION_MS,
      250,
    );
  const remove = async (ids: string[], as = member) => {
    for (const id of ids) expect((await api.call('DELETE', `/api/v0/computers/${id}`, { as })).status).toBe(204);
  };
  const targetOf = async (id: string, privateKey?: string): Promise<SshTarget> => {
    const c = await api.db.prisma.computer.findUniqueOrThrow({ where: { id } });
    return {
      host: c.sshHost!,
      port: c.sshPort!,
      username: c.remoteUser!,
      hostKeyFingerprint: c.hostKeyFingerprint!,
      privateKey: privateKey ?? api.machines.secrets.open(c.sshKeyCiphertext!),
    };
  };

  it('answers 403 to members and 400 to a bad warmPoolSize, changing nothing', async () => {
    for (const as of [member, api.acme.members.guest.apiKey]) {
      expect((await api.call('GET', '/api/v0/computers/pool', { as })).status).toBe(403);
      expect((await api.call('PUT', '/api/v0/computers/pool/providers/local', { as, body: { warmPoolSize: 1 } })).status).toBe(403);
    }
    for (const warmPoolSize of [-1, 51, 2.5, '3', null]) {
      const res = await api.call('PUT', '/api/v0/computers/pool/providers/local', { as: manager, body: { warmPoolSize } });
      expect(res.status, JSON.stringify(warmPoolSize)).toBe(400);
      expect(res.body.detail).toMatch(/warmPoolSize/);
    }
    const unknown = await api.call('PUT', '/api/v0/computers/pool/providers/nowhere', { as: manager, body: { warmPoolSize: 1 } });
    expect(unknown.status).toBe(400);
    expect(unknown.body.detail).toMatch(/not a managed provider/);
    // Templates: bounds, a provider needed, and only managers and owners size a pool.
    const bad = await api.call('POST', '/api/v0/computer-templates', { as: manager, body: { name: 'big', provider: 'local', warmPoolSize: 99 } });
    expect(bad.status).toBe(400);
    const noProvider = await api.call('POST', '/api/v0/computer-templates', { as: manager, body: { name: 'np', warmPoolSize: 1 } });
    expect(noProvider.status).toBe(400);
    expect(noProvider.body.detail).toMatch(/provider/);
    const byMember = await api.call('POST', '/api/v0/computer-templates', { as: member, body: { name: 'mine', provider: 'local', warmPoolSize: 1 } });
    expect(byMember.status).toBe(403);
    const t = await api.call('POST', '/api/v0/computer-templates', { as: manager, body: { name: 'plain', provider: 'local' } });
    expect(t.status).toBe(201);
    expect(t.body.warmPoolSize).toBe(0);
    const patch = await api.call('PATCH', `/api/v0/computer-templates/${t.body.id}`, { as: manager, body: { warmPoolSize: -2 } });
    expect(patch.status).toBe(400);
    expect((await api.call('PATCH', `/api/v0/computer-templates/${t.body.id}`, { as: member, body: { warmPoolSize: 2 } })).status).toBe(403);

    expect(await api.db.prisma.computerTemplate.count({ where: { warmPoolSize: { not: 0 } } })).toBe(0);
    expect(await api.db.prisma.computerTemplate.count({ where: { name: { in: ['big', 'np', 'mine'] } } })).toBe(0);
    expect((await api.db.prisma.organization.findUniqueOrThrow({ where: { id: api.acme.id } })).warmPoolDefaults).toEqual({});
    expect(await pools()).toEqual([]);
    expect(await api.db.prisma.computer.count()).toBe(0);
  });

  it('fills to its size; its computers are in no list, get, limit or event of this organization or another', async () => {
    const set = await setSize(5);
    expect(set.status).toBe(200);
    expect(set.body).toEqual({ provider: 'local', warmPoolSize: 5 });
    expect(await poolReady(5)).toEqual({ provider: 'local', size: 5, ready: 5, provisioning: 0, failed: 0 });
    const rows = await poolRows();
    expect(rows).toHaveLength(5);
    expect(rows.every((c) => c.status === 'active' && c.powerState === 'running')).toBe(true);

    for (const as of [member, manager, api.acme.members.owner.apiKey, api.acme.serviceAccount.apiKey]) {
      const list = await api.call('GET', '/api/v0/computers?includeUnlisted=true&includeDeleted=true', { as });
      expect(list.body.computers).toEqual([]);
      for (const c of rows) {
        expect((await api.call('GET', `/api/v0/computers/${c.id}`, { as })).status).toBe(404);
        expect((await api.call('GET', `/api/v0/computers/name/${c.name}`, { as })).status).toBe(404);
        expect((await api.call('GET', `/api/v0/computers/${c.id}/metrics`, { as })).status).toBe(404);
      }
    }
    const globex = api.globex.members.owner.apiKey;
    expect(await pools(globex)).toEqual([]);
    expect((await api.call('GET', `/api/v0/computers/${rows[0]!.id}`, { as: globex })).status).toBe(404);
    // No organization event (the stream and webhooks) names a pool computer.
    expect(await api.db.prisma.event.count({ where: { computerId: { in: rows.map((c) => c.id) }, type: { in: ['computer.active', 'computer.error'] } } })).toBe(
      0,
    );
    // A plan of one computer still lets the member create one (the pool's five are no one's).
    await api.db.prisma.organization.update({ where: { id: api.acme.id }, data: { entitlements: { maxComputers: 1 } } });
    try {
      const one = await create('only');
      expect(one.status).toBe(201);
      const two = await create('second');
      expect(two.status).toBe(402);
      expect(two.body.detail).toMatch(/allows 1 computers and it has 1/);
      await remove([one.body.id]);
    } finally {
      await api.db.prisma.organization.update({ where: { id: api.acme.id }, data: { entitlements: {} } });
    }
  });

  it("a claim answers 201 active with the caller as owner, the caller's key logging in and the pool key refused", async () => {
    await poolReady(5);
    const before = new Map((await poolRows()).map((c) => [c.id, api.machines.secrets.open(c.sshKeyCiphertext!)]));
    const started = performance.now();
    const res = await create('fast');
    const ms = performance.now() - started;
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      name: 'fast',
      status: 'active',
      providerType: 'local',
      ownerPrincipalKind: 'human',
      ownerId: api.acme.members.user.userId,
    });
    expect(res.body.provisioningSteps.every((s: { status: string }) => s.status === 'completed')).toBe(true);
    console.log(`claim answered in ${ms.toFixed(0)} ms`);
    const id = res.body.id;
    const poolKey = before.get(id);
    expect(poolKey, 'the computer came from the pool').toBeDefined();

    const row = await api.db.prisma.computer.findUniqueOrThrow({ where: { id } });
    expect(row).toMatchObject({ ownerKind: 'human', ownerId: api.acme.members.user.userId, liveName: 'fast', operation: null, isListed: true });
    const home = localComputerNames(api.dataDir, id).home;
    expect(readFileSync(path.join(home, '.ssh', 'authorized_keys'), 'utf8')).toBe(`${row.sshPublicKey}\n`);
    // A client of its own, so no connection the server pooled with the old key answers for it.
    const ok = await fresh.exec(await targetOf(id), 'whoami');
    expect(ok.stdout.trim()).toBe(row.remoteUser);
    const refused = await fresh.exec(await targetOf(id, poolKey), 'true').catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(SshError);
    expect((refused as SshError).kind).toBe('auth_failed');

    expect((await api.call('GET', `/api/v0/computers/${id}`, { as: member })).body.status).toBe('active');
    const audit = await api.db.prisma.auditRecord.findFirst({ where: { target: { path: ['computerId'], equals: id } } });
    expect(audit?.after).toMatchObject({ name: 'fast', fromWarmPool: true });
    await poolReady(5);
    await remove([id]);
  });

  it('10 concurrent creates against a pool of 5: 10 distinct computers, 5 from the pool, none twice', async () => {
    await poolReady(5);
    const pooled = new Set((await poolRows()).map((c) => c.id));
    const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => create(`race-${i}`)));
    expect(answers.map((a) => a.status)).toEqual(Array(10).fill(201));
    const ids = answers.map((a) => a.body.id as string);
    expect(new Set(ids).size).toBe(10);
    const fromPool = ids.filter((id) => pooled.has(id));
    expect(fromPool).toHaveLength(5);
    for (const a of answers) expect(a.body.status).toBe(pooled.has(a.body.id) ? 'active' : 'provisioning');
    const owners = await api.db.prisma.computer.findMany({ where: { id: { in: ids } } });
    expect(owners.every((c) => c.ownerId === api.acme.members.user.userId && c.deletedAt === null)).toBe(true);
    for (const id of ids.filter((x) => !pooled.has(x))) expect((await settled(id)).status).toBe('active');
    await remove(ids);
  });

  it('bulk claims what the pool has and provisions the rest', async () => {
    await poolReady(5);
    const pooled = new Set((await poolRows()).map((c) => c.id));
    const res = await api.call('POST', '/api/v0/computers/bulk', { as: member, body: { quantity: 7, namePrefix: 'bulk', provider: 'local' } });
    expect(res.status).toBe(201);
    expect(res.body.error).toBeUndefined();
    const computers = res.body.computers as { id: string; name: string; status: string }[];
    expect(computers.map((c) => c.name)).toEqual(['bulk-1', 'bulk-2', 'bulk-3', 'bulk-4', 'bulk-5', 'bulk-6', 'bulk-7']);
    expect(computers.filter((c) => pooled.has(c.id) && c.status === 'active')).toHaveLength(5);
    for (const c of computers.filter((x) => !pooled.has(x.id))) expect((await settled(c.id)).status).toBe('active');
    await remove(computers.map((c) => c.id));
  });

  it("a template's pool serves its own requests (clones done ahead, extra repositories as steps); other repositories provision cold", async () => {
    const t = await api.call('POST', '/api/v0/computer-templates', {
      as: manager,
      body: { name: 'app', provider: 'local', repos: [git.url('app')], setupScript: 'echo ready > ~/ready', warmPoolSize: 2 },
    });
    expect(t.status).toBe(201);
    await poolReady(2, t.body.id);
    const pooled = new Set((await poolRows(t.body.id)).map((c) => c.id));

    const warm = await create('tpl-warm', { source: { kind: 'template', templateId: t.body.id, isListed: false } });
    expect(warm.status, JSON.stringify(warm.body)).toBe(201);
    expect(warm.body).toMatchObject({ status: 'active', isListed: false });
    expect(pooled.has(warm.body.id)).toBe(true);
    expect(warm.body.provisioningSteps.map((s: { id: string }) => s.id)).toEqual(['create-infrastructure', 'connect', 'verify', 'clone-1', 'setup-script']);
    const home = localComputerNames(api.dataDir, warm.body.id).home;
    expect(existsSync(path.join(home, 'workspace', 'app', 'README.md'))).toBe(true);

    const more = await create('tpl-more', { source: { kind: 'template', templateId: t.body.id, isListed: true }, repos: [git.url('app'), git.url('other')] });
    expect(more.status).toBe(201);
    expect(pooled.has(more.body.id)).toBe(true);
    expect(more.body.status).toBe('provisioning');
    const done = await settled(more.body.id);
    expect(done.status).toBe('active');
    expect(done.provisioningSteps.map((s: { id: string; status: string }) => [s.id, s.status]).slice(-2)).toEqual([
      ['setup-script', 'completed'],
      ['clone-2', 'completed'],
    ]);

    const cold = await create('tpl-cold', { source: { kind: 'template', templateId: t.body.id, isListed: true }, repos: [git.url('other')] });
    expect(cold.status).toBe(201);
    expect(pooled.has(cold.body.id)).toBe(false);
    expect(cold.body.status).toBe('provisioning');
    expect((await settled(cold.body.id)).status).toBe('active');

    // The template's pool drains when its size goes to 0; its claimed computers stay.
    expect((await api.call('PATCH', `/api/v0/computer-templates/${t.body.id}`, { as: manager, body: { warmPoolSize: 0 } })).status).toBe(200);
    await waitFor('the template pool to drain', async () => (await poolOf(t.body.id)) === undefined, PROVISION_MS, 250);
    for (const id of [warm.body.id, more.body.id, cold.body.id])
      expect((await api.call('GET', `/api/v0/computers/${id}`, { as: member })).body.status).toBe('active');
    await remove([warm.body.id, more.body.id, cold.body.id]);
  });

  it('converges when resized down and up, never touching claimed computers', async () => {
    await poolReady(5);
    const claimed = await create('keeper');
    expect(claimed.body.status).toBe('active');
    await poolReady(5);
    expect((await setSize(2)).status).toBe(200);
    await poolReady(2);
    expect(await poolRows()).toHaveLength(2);
    expect((await setSize(4)).status).toBe(200);
    await poolReady(4);
    const kept = await api.db.prisma.computer.findUniqueOrThrow({ where: { id: claimed.body.id } });
    expect(kept).toMatchObject({ deletedAt: null, status: 'active', ownerKind: 'human' });
    expect((await fresh.exec(await targetOf(claimed.body.id), 'true')).exitCode).toBe(0);
    await remove([claimed.body.id]);
  });

  it('a pool computer that fails its health check is destroyed and replaced', async () => {
    await poolReady(4);
    const [broken, ...rest] = await poolRows();
    // Its sshd is gone (the server and every session of it, the server's pooled connection's too).
    const n = localComputerNames(api.dataDir, broken!.id);
    killSandbox(api.dataDir, broken!.id);
    try {
      execFileSync('pkill', ['-9', '-u', n.user]);
    } catch {
      // Nothing of the user's was running.
    }
    await converge(true);
    await waitFor(
      'the broken computer to be torn down',
      async () => {
        const c = await api.db.prisma.computer.findUniqueOrThrow({ where: { id: broken!.id }, include: { provisioningSteps: true } });
        return c.deletedAt !== null && c.provisioningSteps.find((s) => s.id === 'teardown')?.status === 'completed';
      },
      PROVISION_MS,
      250,
    );
    await poolReady(4);
    const now = (await poolRows()).map((c) => c.id);
    expect(now).not.toContain(broken!.id);
    expect(now).toEqual(expect.arrayContaining(rest.map((c) => c.id)));
    expect(hostTraces(api.dataDir, broken!.id)).toEqual([]);
  });
});

describe.skipIf(skip)('a control plane killed mid-claim', () => {
  it('leaves no half-claimed computer visible to anyone; the pool gets it back or replaces it', { timeout: 300_000 }, async () => {
    if (missing) throw new Error(missing);
    const dataDir = seedDataDir(mkdtempSync(path.join(os.tmpdir(), 'agentplane-claim-crash-')));
    const env = { AGENTPLANE_DATA_DIR: dataDir, AGENTPLANE_COMPUTER_MEMORY_MIB: '256' };
    let server: ServerProcess | undefined = await startServerProcess(env, { processGroup: true });
    const key = server.firstStartKey!;
    const call = async (method: string, p: string, body?: unknown) => {
      const res = await fetch(`${server!.url}${p}`, {
        method,
        headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : undefined };
    };
    const pool = async (): Promise<Pool | undefined> => (await call('GET', '/api/v0/computers/pool')).body.pools[0];
    const frozen: string[] = [];
    const freeze = (dir: string, on: boolean) => {
      if (existsSync(path.join(dir, 'cgroup.freeze'))) writeFileSync(path.join(dir, 'cgroup.freeze'), on ? '1' : '0');
      else if (existsSync(path.join(dir, 'freezer.state'))) writeFileSync(path.join(dir, 'freezer.state'), on ? 'FROZEN' : 'THAWED');
    };
    // Every computer seen on the host (its directory under the provider's root), torn down or not.
    const seen = new Set<string>();
    const ids = () => {
      const root = defaultLocalRoot(dataDir);
      for (const id of existsSync(root) ? readdirSync(root).filter((d) => d.startsWith('cmp_')) : []) seen.add(id);
      return [...seen];
    };
    try {
      expect((await call('PUT', '/api/v0/computers/pool/providers/local', { warmPoolSize: 1 })).status).toBe(200);
      // The cron runs every minute; the PUT's own convergence fills it at once.
      await waitFor('the pool to fill', async () => (await pool())?.ready === 1, PROVISION_MS, 250);
      // Its processes (sshd included) frozen: the claim's key swap hangs until the server dies.
      for (const id of ids())
        for (const dir of cgroupDirs(id)) {
          freeze(dir, true);
          frozen.push(dir);
        }
      const claim = call('POST', '/api/v0/computers', { name: 'victim', provider: 'local' }).catch((err: unknown) => err);
      await waitFor(
        'the claim to hold the computer',
        async () => {
          const p = await pool();
          return p?.ready === 0 && p.provisioning >= 1;
        },
        15_000,
        20,
      );
      expect(await server.stop('SIGKILL')).toBeNull();
      await claim;
      for (const dir of frozen) freeze(dir, false);

      server = await startServerProcess(env, { processGroup: true });
      const list = await call('GET', '/api/v0/computers?includeUnlisted=true&includeDeleted=true');
      expect(list.body.computers).toEqual([]);
      expect((await call('GET', '/api/v0/computers/name/victim')).status).toBe(404);
      // Past the claim's deadline the convergence destroys it (the run at start saw the claim in
      // flight and comes back at its deadline), or the reaper returns it to the pool and its health
      // check keeps it: either way the pool is whole again, and claims work.
      await waitFor('the pool to be whole again', async () => (await pool())?.ready === 1, 150_000, 500);
      const again = await call('POST', '/api/v0/computers', { name: 'victim', provider: 'local' });
      expect(again.status).toBe(201);
      expect(again.body.status).toBe('active');
      expect((await call('GET', '/api/v0/computers')).body.computers.map((c: { name: string }) => c.name)).toEqual(['victim']);
      expect((await call('DELETE', `/api/v0/computers/${again.body.id}`)).status).toBe(204);
      expect((await call('PUT', '/api/v0/computers/pool/providers/local', { warmPoolSize: 0 })).status).toBe(200);
      await waitFor('every computer to be torn down', async () => ids().every((id) => hostTraces(dataDir, id).length === 0), PROVISION_MS, 500);
    } finally {
      for (const dir of frozen) freeze(dir, false);
      await server?.stop('SIGKILL');
      for (const id of ids()) if (hostTraces(dataDir, id).length > 0) removeLocalComputer(dataDir, id);
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
