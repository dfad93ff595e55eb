import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/lib/logger.ts';
import { newId } from '../../src/lib/ids.ts';
import { findTunnelHolder } from '../../src/relay/tunnel-holder.ts';
import { startTunnelLeases, type TunnelLeases } from '../../src/relay/tunnel-leases.ts';
import { createOrgFixture } from '../support/api.ts';
import { BACKENDS, openTestDatabase } from '../support/test-db.ts';
import { waitFor } from '../support/wait.ts';

/**
 * The tunnel table on a real database: which replica holds an agent's tunnel, taken over on a
 * reconnect, valid only while its replica's lease is renewed, and dropped by the holder when the
 * computer is deleted through another replica.
 */
describe.each(BACKENDS)('relay tunnel leases on %s', (backend) => {
  let db: Awaited<ReturnType<typeof openTestDatabase>>;
  let computerId: string;
  const gone: string[] = [];
  const started: TunnelLeases[] = [];
  const log = createLogger({ level: 'silent' });

  const replica = async (replicaId: string, timing = { leaseMs: 60_000, renewMs: 50 }) => {
    const leases = await startTunnelLeases({
      db: db.prisma,
      replicaId,
      peerUrl: `ws://${replicaId}.peers:8081`,
      log,
      ...timing,
      onComputerGone: (id) => gone.push(`${replicaId}:${id}`),
    });
    started.push(leases);
    return leases;
  };

  beforeAll(async () => {
    db = await openTestDatabase(backend);
    const org = await createOrgFixture(db, 'leases');
    computerId = newId('cmp');
    await db.prisma.computer.create({
      data: {
        id: computerId,
        organizationId: org.id,
        ownerKind: 'human',
        ownerId: org.members.user.userId,
        createdBy: org.members.user.userId,
        name: 'nat',
        providerType: 'byom',
        status: 'active',
        connectionType: 'agent',
      },
    });
  });

  afterAll(async () => {
    await Promise.all(started.map((l) => l.stop()));
    await db?.dispose();
  });

  it('records the holder, lets a reconnect elsewhere take the tunnel over, and ignores a stale release', async () => {
    const a = await replica('rpl_a');
    const b = await replica('rpl_b');
    a.held(computerId);
    await a.settled();
    expect(await findTunnelHolder(db.prisma, computerId)).toEqual({ replicaId: 'rpl_a', peerUrl: 'ws://rpl_a.peers:8081' });
    b.held(computerId);
    await b.settled();
    // A's connection closes after B took the agent: its release must not remove B's row.
    a.released(computerId);
    await a.settled();
    expect((await findTunnelHolder(db.prisma, computerId))?.replicaId).toBe('rpl_b');
    b.released(computerId);
    await b.settled();
    expect(await findTunnelHolder(db.prisma, computerId)).toBeUndefined();
  });

  it("stops counting a replica's tunnels once its lease runs out, and gives them up at once on stop", async () => {
    const dying = await replica('rpl_dying', { leaseMs: 300, renewMs: 60_000 });
    dying.held(computerId);
    await dying.settled();
    expect((await findTunnelHolder(db.prisma, computerId))?.replicaId).toBe('rpl_dying');
    // Not renewed (as if the process were killed): gone after its 300 ms.
    await sleep(400);
    expect(await findTunnelHolder(db.prisma, computerId)).toBeUndefined();

    const stopping = await replica('rpl_stopping');
    stopping.held(computerId);
    await stopping.settled();
    await stopping.stop();
    expect(await findTunnelHolder(db.prisma, computerId)).toBeUndefined();
  });

  it('drops the tunnel of a computer deleted through another replica at the next renewal', async () => {
    const holder = await replica('rpl_holder');
    holder.held(computerId);
    await holder.settled();
    await db.prisma.computer.update({ where: { id: computerId }, data: { deletedAt: new Date() } });
    await waitFor('the holder to drop the tunnel', () => gone.includes(`rpl_holder:${computerId}`), 5_000, 20);
  });
});
