import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordEvents } from '../../src/modules/analytics/events.ts';
import { syncGitIntegrations } from '../../src/modules/integrations/seed.ts';
import { computerSetupJob } from '../../src/modules/computers/job-kinds.ts';
import { hexToUuid, SSH_RETRY } from '../../src/ssh/index.ts';
import { startTestApi, type TestApi } from '../support/api.ts';
import { isRoot, sshdMissing, startSshd, TEST_USER, type TestSshd } from '../support/sshd.ts';
import { BACKENDS } from '../support/test-db.ts';
import { waitFor } from '../support/wait.ts';
import { skipWithout } from '../support/parts.ts';

const missing = sshdMissing();
const skip = skipWithout('the computers e2e tests', missing);

/** A git repository on the machine (this host), owned by the user the sshd logs in as. */
function fixtureRepo(name: string, files: Record<string, string>): string {
  const parent = fs.mkdtempSync(path.join(os.tmpdir(), 'agentplane-repo-'));
  fs.chmodSync(parent, 0o755);
  const dir = path.join(parent, name);
  fs.mkdirSync(dir);
  for (const [name, content] of Object.entries(files)) fs.writeFileSync(path.join(dir, name), content);
  const git = (...args: string[]) => execFileSync('git', ['-C', dir, ...args], { stdio: 'pipe' });
  git('init', '-q', '-b', 'main');
  git('add', '.');
  git('-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-q', '-m', 'init');
  if (isRoot) execFileSync('chown', ['-R', `${TEST_USER}:`, dir]);
  return dir;
}

describe.skipIf(skip).each(BACKENDS)('computers API on %s', (backend) => {
  let api: TestApi;
  let sshd: TestSshd;
  const machineHome = () => execFileSync('sh', ['-c', `getent passwd ${sshd.username} | cut -d: -f6`], { encoding: 'utf8' }).trim();

  beforeAll(async () => {
    if (missing) throw new Error(missing);
    [api, sshd] = await Promise.all([startTestApi(backend, { worker: true }), startSshd()]);
    // The organization's key goes into the machine's authorized_keys, as a user would do.
    const key = await api.call('GET', '/api/v0/computers/ssh-public-key', { as: api.acme.members.user.apiKey });
    sshd.authorizeKey(key.body.publicKey);
  });
  afterAll(async () => {
    await api?.close();
    await sshd?.stop();
  });

  const register = (as: string, body: Record<string, unknown>) =>
    api.call('POST', '/api/v0/computers', {
      as,
      body: { provider: 'byom', remoteUser: sshd.username, connection: { host: sshd.host, port: sshd.port }, ...body },
    });
  const count = () => api.db.prisma.computer.count();

  describe('the organization SSH key', () => {
    it('is one stable ed25519 key per organization, private half stored encrypted', async () => {
      const a1 = await api.call('GET', '/api/v0/computers/ssh-public-key', { as: api.acme.members.owner.apiKey });
      const a2 = await api.call('GET', '/api/v0/computers/ssh-public-key', { as: api.acme.serviceAccount.apiKey });
      const g = await api.call('GET', '/api/v0/computers/ssh-public-key', { as: api.globex.members.user.apiKey });
      expect(a1.status).toBe(200);
      expect(a1.body.publicKey).toMatch(/^ssh-ed25519 AAAA\S+ /);
      expect(a2.body.publicKey).toBe(a1.body.publicKey);
      expect(g.body.publicKey).not.toBe(a1.body.publicKey);
      const stored = await api.db.prisma.organizationSshKey.findUniqueOrThrow({ where: { organizationId: api.acme.id } });
      expect(stored.privateKeyCiphertext).toMatch(/^v1\./);
      expect(stored.privateKeyCiphertext).not.toContain('PRIVATE KEY');
    });
  });

  describe('direct registration', () => {
    it('connects at once, pins the host key, reads the machine id and answers 201 active', async () => {
      const res = await register(api.acme.members.user.apiKey, { name: 'direct-1' });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({
        name: 'direct-1',
        providerType: 'byom',
        status: 'active',
        hostId: hexToUuid(sshd.machineId),
        remoteUser: sshd.username,
        ownerPrincipalKind: 'human',
        ownerId: api.acme.members.user.userId,
        isListed: true,
        clonedRepoDirectories: [],
      });
      expect(res.body.provisioningSteps.map((s: { id: string; status: string }) => [s.id, s.status])).toEqual([
        ['connect', 'completed'],
        ['verify', 'completed'],
      ]);
      const stored = await api.db.prisma.computer.findUniqueOrThrow({ where: { id: res.body.id } });
      expect(stored.hostKeyFingerprint).toBe(sshd.hostKeyFingerprint);
      expect(stored).toMatchObject({ connectionType: 'direct', sshHost: sshd.host, sshPort: sshd.port });
      const audit = await api.db.prisma.auditRecord.findFirst({ where: { eventType: 'computer_change', organizationId: api.acme.id } });
      expect(audit?.target).toEqual({ computerId: res.body.id });
    });

    it('answers 400 naming host, port and cause when the machine cannot be reached, storing nothing', async () => {
      const before = await count();
      const refused = await api.call('POST', '/api/v0/computers', {
        as: api.acme.members.manager.apiKey,
        body: { name: 'nowhere', provider: 'byom', remoteUser: 'root', connection: { host: '127.0.0.1', port: 1 } },
      });
      expect(refused.status).toBe(400);
      expect(refused.body.detail).toContain('127.0.0.1:1');
      expect(refused.body.detail).toMatch(/refused/);
      expect(await count()).toBe(before);
    });

    it('answers 400 when the organization key is not authorized on the machine', async () => {
      const before = await count();
      const res = await register(api.globex.members.user.apiKey, { name: 'not-authorized' });
      expect(res.status).toBe(400);
      expect(res.body.detail).toContain(`${sshd.host}:${sshd.port}`);
      expect(res.body.detail).toMatch(/authentication as "[^"]+" failed/);
      expect(await count()).toBe(before);
    });

    it('refuses bad bodies with 400 and a detail, storing nothing', async () => {
      const before = await count();
      const as = api.acme.members.user.apiKey;
      const cases: [Record<string, unknown>, RegExp][] = [
        [{ name: '' }, /name/],
        [{ name: 'x'.repeat(64) }, /63/],
        [{ name: 'has space' }, /name may hold/],
        [{ name: 'ok', hostId: 'not-a-uuid' }, /hostId must be a UUID/],
        [{ name: 'ok', repos: Array.from({ length: 21 }, (_, i) => `https://example.com/r${i}.git`) }, /at most 20/],
        [{ name: 'ok', repos: ['not a url'] }, /not a valid git URL/],
        [{ name: 'ok', repos: ['https://user:pw@example.com/r.git'] }, /password/],
        [{ name: 'ok', remoteUser: undefined }, /remoteUser is required/],
        [{ name: 'ok', connection: undefined }, /needs connection/],
        [{ name: 'ok', provider: 'local' }, /Provider "local" is not available/],
        [{ name: 'ok', source: { kind: 'computer', sourceComputerId: 'cmp_x' } }, /source applies to managed/],
        [{ name: 'ok', source: { kind: 'template' } }, /templateId/],
        [{ name: 'ok', unknownField: 1 }, /unknownField|Unrecognized/],
        [{ name: 'ok', autoInstallDeps: 'yes' }, /autoInstallDeps/],
      ];
      for (const [body, detail] of cases) {
        const res = await register(as, body);
        expect(res.status, JSON.stringify(body)).toBe(400);
        expect(res.body.detail, JSON.stringify(body)).toMatch(detail);
        expect(res.body).toMatchObject({ status: 400, title: 'Bad Request' });
      }
      expect(await count()).toBe(before);
    });

    it('keeps names and host ids unique per owner (409) but lets another owner register the same machine', async () => {
      const as = api.acme.members.manager.apiKey;
      expect((await register(as, { name: 'dup' })).status).toBe(201);
      const sameName = await register(as, { name: 'dup' });
      expect(sameName.status).toBe(409);
      expect(sameName.body.detail).toContain('"dup"');
      const sameHost = await register(as, { name: 'dup-2' });
      expect(sameHost.status).toBe(409);
      expect(sameHost.body.detail).toContain('hostId');
      expect((await register(api.acme.members.owner.apiKey, { name: 'dup' })).status).toBe(201);
    });

    it('answers 403 to guests and 402 when the plan does not allow another computer', async () => {
      const guest = await register(api.acme.members.guest.apiKey, { name: 'guest-pc' });
      expect(guest.status).toBe(403);
      await api.db.prisma.organization.update({ where: { id: api.acme.id }, data: { entitlements: { computers: false } } });
      const noPlan = await register(api.acme.serviceAccount.apiKey, { name: 'sa-pc' });
      expect(noPlan.status).toBe(402);
      expect(noPlan.body.detail).toMatch(/not included in this organization's plan/);
      await api.db.prisma.organization.update({ where: { id: api.acme.id }, data: { entitlements: { maxComputers: 1 } } });
      const full = await register(api.acme.serviceAccount.apiKey, { name: 'sa-pc' });
      expect(full.status).toBe(402);
      expect(full.body.detail).toMatch(/plan allows 1 computers/);
      await api.db.prisma.organization.update({ where: { id: api.acme.id }, data: { entitlements: {} } });
    });

    it('answers 402 when the owner has used up their credits limit this month', async () => {
      const user = api.globex.members.manager;
      await api.db.prisma.organization.update({ where: { id: api.globex.id }, data: { creditLimit: 1_000_000n } });
      await recordEvents(api.db.prisma, [
        {
          kind: 'token_usage',
          organizationId: api.globex.id,
          userId: user.userId,
          occurredAt: new Date(),
          model: 'm',
          modelTier: 'standard',
          inputTokens: 1_000_000,
          outputTokens: 0,
        },
      ]);
      const res = await api.call('POST', '/api/v0/computers', {
        as: user.apiKey,
        body: { name: 'over', provider: 'byom', remoteUser: 'x', connection: { host: '127.0.0.1', port: 1 } },
      });
      expect(res.status).toBe(402);
      expect(res.body.detail).toMatch(/credits limit of 1000000 for this month is used up/);
      await api.db.prisma.organization.update({ where: { id: api.globex.id }, data: { creditLimit: null } });
    });
  });

  describe('reads and updates', () => {
    let mine: { id: string; hostId: string };
    let robots: { id: string };

    beforeAll(async () => {
      mine = (await register(api.acme.members.user.apiKey, { name: 'reads-1', hostId: '2b0c5a52-4f7e-4a57-9a0e-0f8b1c0d0e01' })).body;
      robots = (
        await register(api.acme.members.manager.apiKey, {
          name: 'robot-pc',
          serviceAccountId: api.acme.serviceAccount.id,
          hostId: '2b0c5a52-4f7e-4a57-9a0e-0f8b1c0d0e02',
        })
      ).body;
    });

    it('lists only the caller’s computers, newest first, with steps only on request', async () => {
      const res = await api.call('GET', '/api/v0/computers', { as: api.acme.members.user.apiKey });
      expect(res.status).toBe(200);
      const names = res.body.computers.map((c: { name: string }) => c.name);
      expect(names[0]).toBe('reads-1');
      expect(names).toContain('direct-1');
      expect(names).not.toContain('robot-pc');
      expect(res.body.computers[0].provisioningSteps).toBeUndefined();
      const withSteps = await api.call('GET', '/api/v0/computers?includeProvisioningSteps=true&includeUnlisted=true', {
        as: api.acme.members.user.apiKey,
      });
      expect(withSteps.body.computers[0].provisioningSteps.length).toBeGreaterThan(0);
      const byHost = await api.call('GET', `/api/v0/computers?hostId=${mine.hostId}`, { as: api.acme.members.user.apiKey });
      expect(byHost.body.computers.map((c: { id: string }) => c.id)).toEqual([mine.id]);
      const sa = await api.call('GET', '/api/v0/computers', { as: api.acme.serviceAccount.apiKey });
      expect(sa.body.computers.map((c: { id: string }) => c.id)).toEqual([robots.id]);
      expect(sa.body.computers[0]).toMatchObject({ ownerPrincipalKind: 'service', ownerId: api.acme.serviceAccount.id });
    });

    it('refuses bad list queries with 400', async () => {
      for (const q of ['hostId=nope', 'includeProvisioningSteps=yes', 'includeUnlisted=1', 'other=1']) {
        const res = await api.call('GET', `/api/v0/computers?${q}`, { as: api.acme.members.user.apiKey });
        expect(res.status, q).toBe(400);
      }
    });

    it('finds a computer by name among the caller’s own only', async () => {
      const own = await api.call('GET', '/api/v0/computers/name/reads-1', { as: api.acme.members.user.apiKey });
      expect(own.status).toBe(200);
      expect(own.body.id).toBe(mine.id);
      const other = await api.call('GET', '/api/v0/computers/name/reads-1', { as: api.acme.members.manager.apiKey });
      expect(other.status).toBe(404);
    });

    it('lets managers reach service-account computers, answers 403 to members and 404 across owners and organizations', async () => {
      const path = (id: string) => `/api/v0/computers/${id}`;
      expect((await api.call('GET', path(robots.id), { as: api.acme.members.manager.apiKey })).status).toBe(200);
      expect((await api.call('GET', path(robots.id), { as: api.acme.members.owner.jwt })).status).toBe(200);
      expect((await api.call('GET', path(robots.id), { as: api.acme.serviceAccount.apiKey })).status).toBe(200);
      expect((await api.call('GET', path(robots.id), { as: api.acme.members.user.apiKey })).status).toBe(403);
      expect((await api.call('GET', path(mine.id), { as: api.acme.members.manager.apiKey })).status).toBe(404);
      for (const id of [mine.id, robots.id]) {
        for (const as of [api.globex.members.owner.apiKey, api.globex.serviceAccount.apiKey]) {
          const res = await api.call('GET', path(id), { as });
          expect(res.status).toBe(404);
          expect((await api.call('DELETE', path(id), { as })).status).toBe(404);
          expect((await api.call('POST', `${path(id)}/refresh`, { as })).status).toBe(404);
        }
      }
      expect((await api.call('GET', path(mine.id))).status).toBe(401);
    });

    it('renames, sets remoteUser, keeps hostId immutable and names unique', async () => {
      const as = api.acme.members.user.apiKey;
      const path = `/api/v0/computers/${mine.id}`;
      const renamed = await api.call('PATCH', path, { as, body: { name: 'reads-renamed', remoteUser: 'someone' } });
      expect(renamed.status).toBe(200);
      expect(renamed.body).toMatchObject({ name: 'reads-renamed', remoteUser: 'someone' });
      expect((await api.call('GET', '/api/v0/computers/name/reads-renamed', { as })).status).toBe(200);
      expect((await api.call('GET', '/api/v0/computers/name/reads-1', { as })).status).toBe(404);
      const clash = await api.call('PATCH', path, { as, body: { name: 'direct-1' } });
      expect(clash.status).toBe(409);
      const hostChange = await api.call('PATCH', path, { as, body: { hostId: '2b0c5a52-4f7e-4a57-9a0e-0f8b1c0d0e09' } });
      expect(hostChange.status).toBe(400);
      expect(hostChange.body.detail).toMatch(/immutable/);
      expect((await api.call('PATCH', path, { as, body: { color: 'red' } })).status).toBe(400);
      expect((await api.call('PATCH', path, { as, body: { name: '' } })).status).toBe(400);
      const unchanged = await api.call('PATCH', path, { as, body: {} });
      expect(unchanged.status).toBe(200);
      expect(unchanged.body.name).toBe('reads-renamed');
      await api.call('PATCH', path, { as, body: { remoteUser: sshd.username } });
    });

    it('assigns a hostId once when none is set, unique among the owner’s computers', async () => {
      const as = api.acme.members.user.apiKey;
      const created = await register(as, { name: 'no-host', hostId: '2b0c5a52-4f7e-4a57-9a0e-0f8b1c0d0e03' });
      await api.db.prisma.computer.update({ where: { id: created.body.id }, data: { hostId: null, liveHostId: null } });
      const taken = await api.call('PATCH', `/api/v0/computers/${created.body.id}`, { as, body: { hostId: mine.hostId } });
      expect(taken.status).toBe(409);
      const set = await api.call('PATCH', `/api/v0/computers/${created.body.id}`, {
        as,
        body: { hostId: '2b0c5a52-4f7e-4a57-9a0e-0f8b1c0d0e04' },
      });
      expect(set.status).toBe(200);
      expect(set.body.hostId).toBe('2b0c5a52-4f7e-4a57-9a0e-0f8b1c0d0e04');
    });

    it('restart is for managed sandboxes: 400 for byom', async () => {
      const res = await api.call('POST', `/api/v0/computers/${mine.id}/restart`, { as: api.acme.members.user.apiKey });
      expect(res.status).toBe(400);
      expect(res.body.detail).toMatch(/byom/);
    });
  });

  describe('machine operations', () => {
    let computer: { id: string };
    const repoDir = () => path.join(machineHome(), 'workspace', `app-${backend}`);

    beforeAll(async () => {
      fs.rmSync(repoDir(), { recursive: true, force: true });
      const repo = fixtureRepo(`app-${backend}`, { 'package.json': JSON.stringify({ name: 'app', version: '1.0.0', private: true }) });
      const res = await register(api.acme.members.owner.apiKey, {
        name: `ops-${backend}`,
        hostId: backend === 'pglite' ? 'a1b1c1d1-0000-4000-8000-000000000001' : 'a1b1c1d1-0000-4000-8000-000000000002',
        repos: [`file://${repo}`, 'file:///nonexistent/repo.git'],
        autoInstallDeps: true,
      });
      expect(res.status).toBe(201);
      expect(res.body.status).toBe('active');
      computer = res.body;
    });

    it('clones each repository and installs dependencies as durable jobs, recording every step', async () => {
      const as = api.acme.members.owner.apiKey;
      const done = await waitFor('set-up to finish', async () => {
        const res = await api.call('GET', `/api/v0/computers/${computer.id}`, { as });
        const steps = res.body.provisioningSteps as { id: string; status: string }[];
        return steps.every((s) => ['completed', 'failed', 'skipped'].includes(s.status)) ? res.body : undefined;
      });
      const steps = Object.fromEntries(done.provisioningSteps.map((s: { id: string }) => [s.id, s]));
      expect(steps['clone-1']).toMatchObject({ status: 'completed' });
      expect(steps['clone-2']).toMatchObject({ status: 'failed' });
      expect(steps['clone-2'].error).toMatch(/nonexistent/);
      expect(steps['install-deps']).toMatchObject({ status: 'completed' });
      expect(steps['install-deps'].installSessionId).toMatch(/^[0-9a-f-]{36}$/);
      expect(done.clonedRepoDirectories).toEqual([repoDir()]);
      expect(fs.existsSync(path.join(repoDir(), '.git'))).toBe(true);
      expect(fs.existsSync(path.join(repoDir(), 'package-lock.json'))).toBe(true);
      const runs = await api.db.prisma.installRun.findMany({ where: { computerId: computer.id } });
      expect(runs).toMatchObject([{ status: 'completed', exitCode: 0, directory: repoDir() }]);
    });

    it('install-deps answers 202 with the step running, 409 while it runs, and completes again', async () => {
      const as = api.acme.members.owner.apiKey;
      const path = `/api/v0/computers/${computer.id}/install-deps`;
      const [first, second] = await Promise.all([api.call('POST', path, { as }), api.call('POST', path, { as })]);
      const statuses = [first.status, second.status].sort();
      expect(statuses).toEqual([202, 409]);
      const accepted = first.status === 202 ? first : second;
      const rejected = first.status === 202 ? second : first;
      expect(rejected.body.detail).toBe('Dependency installation already in progress');
      const step = accepted.body.provisioningSteps.find((s: { id: string }) => s.id === 'install-deps');
      expect(step.status).toBe('running');
      await waitFor('the install session to end', async () => {
        const s = await api.db.prisma.provisioningStep.findUniqueOrThrow({ where: { computerId_id: { computerId: computer.id, id: 'install-deps' } } });
        return s.status === 'completed' && s.installSessionId === step.installSessionId ? s : undefined;
      });
    });

    it('refresh writes the organization’s git credentials onto the machine, readable only by its user', async () => {
      const as = api.acme.members.owner.apiKey;
      await syncGitIntegrations(api.db.prisma, api.machines.secrets, [
        { organization: api.acme.id, host: 'git.example.com', username: 'x-access-token', token: 'tok-secret-123' },
      ]);
      const stored = await api.db.prisma.sourceControlIntegration.findFirstOrThrow({ where: { organizationId: api.acme.id } });
      expect(stored.tokenCiphertext).not.toContain('tok-secret-123');
      const res = await api.call('POST', `/api/v0/computers/${computer.id}/refresh`, { as });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ configured: 1 });
      const fill = execFileSync('su', ['-s', '/bin/sh', sshd.username, '-c', 'printf "protocol=https\\nhost=git.example.com\\n\\n" | git credential fill'], {
        encoding: 'utf8',
      });
      expect(fill).toContain('password=tok-secret-123');
      await syncGitIntegrations(api.db.prisma, api.machines.secrets, []);
      const none = await api.call('POST', `/api/v0/computers/${computer.id}/refresh`, { as });
      expect(none.body).toEqual({ configured: 0 });
    });

    it('metrics: takes a fresh sample when none is stored, keeps the series, filters by start', async () => {
      const as = api.acme.members.owner.apiKey;
      const path = `/api/v0/computers/${computer.id}/metrics`;
      const first = await api.call('GET', path, { as });
      expect(first.status).toBe(200);
      expect(first.body).toHaveLength(1);
      const sample = first.body[0];
      expect(sample.memTotal).toBeGreaterThan(0);
      expect(sample.memUsed).toBeLessThanOrEqual(sample.memTotal);
      expect(sample.cpuCount).toBe(os.cpus().length);
      expect(sample.cpuUsedPct).toBeGreaterThanOrEqual(0);
      expect(sample.cpuUsedPct).toBeLessThanOrEqual(100);
      expect(sample.diskTotal).toBeGreaterThan(sample.diskUsed);
      const again = await api.call('GET', path, { as });
      expect(again.body).toEqual(first.body);
      const future = await api.call('GET', `${path}?start=${encodeURIComponent(new Date(Date.now() + 3_600_000).toISOString())}`, { as });
      expect(future.body).toEqual([]);
      const bad = await api.call('GET', `${path}?start=yesterday`, { as });
      expect(bad.status).toBe(400);
      expect(bad.body.detail).toMatch(/ISO 8601/);
    });

    it('refuses a changed host key and says so', async () => {
      const as = api.acme.members.owner.apiKey;
      const victim = await register(as, { name: `hostkey-${backend}`, hostId: crypto.randomUUID() });
      expect(victim.status).toBe(201);
      await sshd.restart({ newHostKey: true });
      // Pooled connections made with the old key live on, as they would on a real machine.
      sshd.dropConnections();
      await sleep(300);
      try {
        const res = await api.call('POST', `/api/v0/computers/${victim.body.id}/refresh`, { as });
        expect(res.status).toBe(503);
        expect(res.body.detail, res.body.detail).toMatch(/host key/i);
        expect(res.body.metadata).toEqual({ sshError: 'host_key_mismatch' });
        // The pin is unchanged: nothing accepted the new key behind the user's back.
        const stored = await api.db.prisma.computer.findUniqueOrThrow({ where: { id: victim.body.id } });
        expect(stored.hostKeyFingerprint).not.toBe(sshd.hostKeyFingerprint);
      } finally {
        await api.db.prisma.computer.updateMany({ where: { sshPort: sshd.port }, data: { hostKeyFingerprint: sshd.hostKeyFingerprint } });
      }
    });

    it('set-up fails at once on a host key mismatch, which is never transient, and skips the steps after it', async () => {
      const as = api.acme.members.owner.apiKey;
      const res = await register(as, { name: `pinned-${backend}`, hostId: crypto.randomUUID() });
      expect(res.status).toBe(201);
      const id = res.body.id as string;
      const repo = fixtureRepo(`pinned-${backend}`, { 'README.md': '# pinned\n' });
      // The machine now presents a key other than the one pinned: another machine, or someone in between.
      await api.db.prisma.computer.update({
        where: { id },
        data: { hostKeyFingerprint: `SHA256:${Buffer.alloc(32, 7).toString('base64').replace(/=+$/, '')}`, repos: [`file://${repo}`] },
      });
      await api.db.prisma.provisioningStep.update({
        where: { computerId_id: { computerId: id, id: 'verify' } },
        data: { status: 'pending', startedAt: null, completedAt: null },
      });
      await api.db.prisma.provisioningStep.createMany({
        data: [
          { computerId: id, id: 'clone-1', name: `Cloning file://${repo}`, status: 'pending', position: 2 },
          { computerId: id, id: 'install-deps', name: 'Installing dependencies', status: 'pending', position: 3 },
        ],
      });
      const started = Date.now();
      await api.queue.send(computerSetupJob, { computerId: id });
      const steps = await waitFor(
        'the set-up to end',
        async () => {
          const all = await api.db.prisma.provisioningStep.findMany({ where: { computerId: id }, orderBy: { position: 'asc' } });
          return all.every((s) => s.status !== 'pending' && s.status !== 'running') && all;
        },
        30_000,
        100,
      );
      // A transient failure would be tried again for SSH_RETRY's two minutes; this one is not tried again at all.
      expect(Date.now() - started).toBeLessThan(SSH_RETRY.budgetMs / 4);
      expect(steps.map((s) => [s.id, s.status])).toEqual([
        ['connect', 'completed'],
        ['verify', 'failed'],
        ['clone-1', 'skipped'],
        ['install-deps', 'skipped'],
      ]);
      expect(steps[1]!.error).toMatch(/host key mismatch: expected SHA256:/);
      expect(steps[2]!.error).toBe('the workspace could not be prepared');
      expect((await api.call('DELETE', `/api/v0/computers/${id}`, { as })).status).toBe(204);
    });

    it('delete hides the computer, frees its name, and leaves the machine and its files intact', async () => {
      const as = api.acme.members.owner.apiKey;
      const res = await api.call('DELETE', `/api/v0/computers/${computer.id}`, { as });
      expect(res.status).toBe(204);
      expect((await api.call('GET', `/api/v0/computers/${computer.id}`, { as })).status).toBe(404);
      expect((await api.call('DELETE', `/api/v0/computers/${computer.id}`, { as })).status).toBe(404);
      expect((await api.call('GET', `/api/v0/computers/name/ops-${backend}`, { as })).status).toBe(404);
      const list = await api.call('GET', '/api/v0/computers?includeUnlisted=true', { as });
      expect(list.body.computers.map((c: { id: string }) => c.id)).not.toContain(computer.id);
      // Where a deleted computer is still listed, it reads deleted, not the status it had.
      const withDeleted = await api.call('GET', '/api/v0/computers?includeUnlisted=true&includeDeleted=true', { as });
      expect(withDeleted.body.computers.find((c: { id: string }) => c.id === computer.id)).toMatchObject({
        status: 'deleted',
        deletedAt: expect.any(Number),
      });
      const stored = await api.db.prisma.computer.findUniqueOrThrow({ where: { id: computer.id } });
      expect(stored.deletedAt).not.toBeNull();
      expect(fs.existsSync(path.join(repoDir(), 'package.json'))).toBe(true);
      const again = await register(as, { name: `ops-${backend}`, hostId: crypto.randomUUID() });
      expect(again.status, again.body.detail).toBe(201);
    });
  });
});
