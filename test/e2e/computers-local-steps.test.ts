import { chmodSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../support/api.ts';
import { hostTraces, localProviderMissing, removeLocalComputer } from '../support/local-computers.ts';
import { waitFor } from '../support/wait.ts';

const missing = await localProviderMissing();
const skip = missing !== undefined && process.env.CI !== 'true';
if (skip) console.warn(`skipping the local provider step tests: ${missing}`);

const PROVISION_MS = 90_000;
// The template's setup script sleeps this long: far longer than a teardown takes.
const SCRIPT_SLEEP_S = 60;

describe.skipIf(skip)('managed set-up as a job of its own, outside the stack lock (local provider)', { timeout: 180_000 }, () => {
  let api: TestApi;
  let as: string;

  beforeAll(async () => {
    if (missing) throw new Error(missing);
    api = await startTestApi('pglite', {
      worker: true,
      env: { AGENTPLANE_LOCAL_PROVIDER: 'true', AGENTPLANE_COMPUTER_CPUS: '0.5', AGENTPLANE_COMPUTER_MEMORY_MIB: '256' },
    });
    chmodSync(api.dataDir, 0o711);
    as = api.acme.members.user.apiKey;
  });
  afterAll(async () => {
    if (api) {
      const live = await api.db.prisma.computer.findMany({ where: { deletedAt: null } });
      await Promise.all(live.map((c) => api.call('DELETE', `/api/v0/computers/${c.id}`, { as: api.acme.members.owner.apiKey })));
      await waitFor('every teardown to finish', async () => (await api.db.prisma.computer.count({ where: { operation: 'teardown' } })) === 0, PROVISION_MS, 250).catch(
        (err: unknown) => console.error(err),
      );
      for (const { id } of await api.db.prisma.computer.findMany({ select: { id: true } })) {
        if (hostTraces(api.dataDir, id).length > 0) removeLocalComputer(api.dataDir, id);
      }
    }
    await api?.close();
  });

  const step = (computerId: string, id: string) => api.db.prisma.provisioningStep.findUnique({ where: { computerId_id: { computerId, id } } });
  const jobs = async (computerId: string) =>
    api.db.prisma.$queryRawUnsafe<{ name: string; state: string; data: { operation?: string } }[]>(
      `SELECT name, state::text, data FROM pgboss.job WHERE data->>'computerId' = $1 ORDER BY created_on`,
      computerId,
    );

  it('a teardown during a long set-up step runs at once, and the steps it skipped stay skipped', async () => {
    const template = await api.call('POST', '/api/v0/computer-templates', {
      as: api.acme.members.manager.apiKey,
      body: { name: 'slow box', provider: 'local', setupScript: `sleep ${SCRIPT_SLEEP_S}\necho done > ~/slept\n`, autoInstallDeps: true },
    });
    expect(template.status).toBe(201);
    const created = await api.call('POST', '/api/v0/computers', { as, body: { name: 'slow', source: { kind: 'template', templateId: template.body.id, isListed: true } } });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    expect(created.body.provisioningSteps.map((s: { id: string }) => s.id)).toEqual(['create-infrastructure', 'connect', 'verify', 'setup-script', 'install-deps']);

    await waitFor('the setup script to run', async () => (await step(id, 'setup-script'))?.status === 'running', PROVISION_MS, 100);
    // The stack job ended with `pulumi up`; the set-up runs as its own job.
    const before = await jobs(id);
    expect(before.filter((j) => j.name === 'computers.stack').map((j) => [j.data.operation, j.state])).toEqual([['provision', 'completed']]);
    expect(before.filter((j) => j.name === 'computers.setup').map((j) => j.state)).toEqual(['active']);

    const deleting = Date.now();
    expect((await api.call('DELETE', `/api/v0/computers/${id}`, { as })).status).toBe(204);
    await waitFor('the teardown to complete', async () => (await step(id, 'teardown'))?.status === 'completed', PROVISION_MS, 100);
    const tookMs = Date.now() - deleting;
    // Before set-up left the stack lock, the teardown queued behind the whole script.
    expect(tookMs).toBeLessThan((SCRIPT_SLEEP_S * 1000) / 2);
    expect(hostTraces(api.dataDir, id)).toEqual([]);

    // The set-up notices (its machine is gone) and stops without writing over the teardown's skips.
    await waitFor('the set-up job to end', async () => (await jobs(id)).filter((j) => j.name === 'computers.setup').every((j) => j.state === 'completed'), 60_000, 250);
    const steps = await api.db.prisma.provisioningStep.findMany({ where: { computerId: id }, orderBy: { position: 'asc' } });
    expect(steps.map((s) => [s.id, s.status, s.error])).toEqual([
      ['create-infrastructure', 'completed', null],
      ['connect', 'completed', null],
      ['verify', 'completed', null],
      ['setup-script', 'skipped', 'the computer was deleted'],
      ['install-deps', 'skipped', 'the computer was deleted'],
      ['teardown', 'completed', null],
    ]);
    const stored = await api.db.prisma.computer.findUniqueOrThrow({ where: { id } });
    expect(stored.operation).toBeNull();
  });
});
