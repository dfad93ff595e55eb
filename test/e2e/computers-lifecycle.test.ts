import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import type { Prisma } from '../../src/generated/prisma/client.ts';
import type { JobContext } from '../../src/jobs/job.ts';
import { fixedClock } from '../../src/lib/clock.ts';
import { newId } from '../../src/lib/ids.ts';
import { createLogger } from '../../src/lib/logger.ts';
import type { ComputerJobDeps } from '../../src/modules/computers/job-deps.ts';
import { reapComputers } from '../../src/modules/computers/managed/reaper.ts';
import { POOL_OWNER } from '../../src/modules/computers/pool/pools.ts';
import { convergePools } from '../../src/modules/computers/pool/converge.ts';
import { createProvisioner } from '../../src/provisioning/provisioner.ts';
import { startTestApi, type TestApi } from '../support/api.ts';
import { BACKENDS } from '../support/test-db.ts';

/**
 * Operations past their deadline, on real databases with the real job queue (not worked: what is
 * queued is read back): each ends as the lifecycle declares, whether the reaper or the warm pool's
 * convergence finds it.
 */
describe.each(BACKENDS)('the computer lifecycle on %s', (backend) => {
  let api: TestApi;
  const now = new Date();
  const past = new Date(now.getTime() - 1_000);
  const later = new Date(now.getTime() + 1_000);

  beforeAll(async () => {
    api = await startTestApi(backend);
  });
  afterAll(async () => {
    await api?.close();
  });

  const deps = (): ComputerJobDeps => {
    const config = loadConfig({ AGENTPLANE_DATA_DIR: api.dataDir, AGENTPLANE_LOCAL_PROVIDER: 'false' });
    return {
      ...api.machines,
      db: api.db.prisma,
      clock: fixedClock(now),
      provisioner: createProvisioner(config, api.machines.secrets),
      managed: { ...config.managed, idlePauseMs: 0 },
    };
  };
  const ctx = (): Pick<JobContext, 'send' | 'log' | 'signal'> => ({
    send: (kind, payload, opts) => api.queue.send(kind, payload, opts),
    log: createLogger({ level: 'silent' }),
    signal: new AbortController().signal,
  });

  /** A managed computer of acme's in `operation`, with these steps. */
  const computer = async (fields: Partial<Prisma.ComputerUncheckedCreateInput>, steps: [string, string][] = []) => {
    const id = newId('cmp');
    await api.db.prisma.computer.create({
      data: {
        id,
        organizationId: api.acme.id,
        ownerKind: 'human',
        ownerId: api.acme.members.user.userId,
        name: id,
        liveName: id,
        providerType: 'local',
        status: 'active',
        powerState: 'running',
        createdBy: api.acme.members.user.userId,
        ...fields,
        provisioningSteps: { create: steps.map(([stepId, status], position) => ({ id: stepId, name: stepId, status, position })) },
      },
    });
    return id;
  };
  const stored = (id: string) => api.db.prisma.computer.findUniqueOrThrow({ where: { id }, include: { provisioningSteps: { orderBy: { position: 'asc' } } } });
  const steps = async (id: string) => (await stored(id)).provisioningSteps.map((s) => [s.id, s.status, s.error]);
  const events = async (id: string) =>
    (await api.db.prisma.event.findMany({ where: { computerId: id }, orderBy: { id: 'asc' } })).map((e) => {
      const step = (e.data as { step?: { id: string; status: string } }).step;
      return [e.type, step ? `${step.id}:${step.status}` : e.data];
    });
  const stackJobs = async (id: string) =>
    (
      await api.db.prisma.$queryRawUnsafe<{ operation: string }[]>(
        `SELECT data->>'operation' AS operation FROM pgboss.job WHERE name = 'computers.stack' AND data->>'computerId' = $1 ORDER BY created_on`,
        id,
      )
    ).map((j) => j.operation);
  const claimed = () =>
    computer({ ownerKind: POOL_OWNER.kind, ownerId: POOL_OWNER.id, operation: 'claim', operationDeadline: past }, [
      ['create-infrastructure', 'completed'],
      ['connect', 'completed'],
    ]);

  it('the reaper ends each operation past its deadline as declared, and leaves the rest alone', async () => {
    const provisioning = await computer({ status: 'provisioning', operation: 'provision', operationDeadline: past }, [
      ['create-infrastructure', 'completed'],
      ['connect', 'running'],
      ['verify', 'pending'],
    ]);
    const pausing = await computer({ operation: 'pause', operationDeadline: past });
    const tearing = await computer({ deletedAt: past, liveName: null, operation: 'teardown', operationDeadline: past }, [['teardown', 'failed']]);
    const claim = await claimed();
    const inTime = await computer({ operation: 'resume', operationDeadline: later });

    await reapComputers(deps(), ctx());

    const failed = await stored(provisioning);
    expect(failed).toMatchObject({
      status: 'error',
      operation: null,
      operationDeadline: null,
      operationError: `provision did not finish by ${past.toISOString()}`,
    });
    expect(await steps(provisioning)).toEqual([
      ['create-infrastructure', 'completed', null],
      ['connect', 'failed', `timed out: provision did not finish by ${past.toISOString()}`],
      ['verify', 'skipped', 'provisioning timed out'],
    ]);
    const late = `provision did not finish by ${past.toISOString()}`;
    expect(await events(provisioning)).toEqual([
      ['computer.step', 'connect:failed'],
      ['computer.step', 'verify:skipped'],
      ['computer.status', { status: 'error', error: late }],
      ['computer.error', { computerId: provisioning, status: 'error', error: late }],
    ]);

    expect(await stored(pausing)).toMatchObject({
      status: 'active',
      powerState: 'running',
      operation: null,
      operationDeadline: null,
      operationError: `pause did not finish by ${past.toISOString()}`,
    });
    expect(await stackJobs(pausing)).toEqual([]);

    const retried = await stored(tearing);
    expect(retried.operation).toBe('teardown');
    expect(retried.operationDeadline!.getTime()).toBe(now.getTime() + deps().managed.provisionTimeoutMs);
    expect(await stackJobs(tearing)).toEqual(['teardown']);

    // A claim's expiry destroys its computer, as the pool's convergence does (below).
    const destroyed = await stored(claim);
    expect(destroyed.deletedAt).toEqual(now);
    expect(destroyed).toMatchObject({ operation: 'teardown', sshKeyCiphertext: null });
    expect(await steps(claim)).toEqual([
      ['create-infrastructure', 'completed', null],
      ['connect', 'completed', null],
      ['teardown', 'pending', null],
    ]);
    expect(await stackJobs(claim)).toEqual(['teardown']);

    expect(await stored(inTime)).toMatchObject({ operation: 'resume', operationDeadline: later, operationError: null });
  });

  it("the pool's convergence expires a claim past its deadline the same way", async () => {
    const claim = await claimed();
    await convergePools(deps(), ctx(), { organizationId: api.acme.id });
    const destroyed = await stored(claim);
    expect(destroyed.deletedAt).toEqual(now);
    expect(destroyed).toMatchObject({ operation: 'teardown', sshKeyCiphertext: null });
    expect((await steps(claim)).at(-1)).toEqual(['teardown', 'pending', null]);
    expect(await stackJobs(claim)).toEqual(['teardown']);
  });
});
