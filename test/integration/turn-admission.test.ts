import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../src/lib/ids.ts';
import { admitTurnAtCommit, turnNotAdmitted, type TurnLimits } from '../../src/modules/sessions/turn-admission.ts';
import { createOrgFixture } from '../support/api.ts';
import { BACKENDS, openTestDatabase } from '../support/test-db.ts';

/**
 * The running-turn limits counted inside each turn's COMMIT (the sessions_turn_admission
 * trigger), on both databases: a turn over its organization's or owner's limit fails its commit
 * and leaves nothing behind; turns committing at once on separate connections count one after
 * the other, so no more than the limit start; subagent sessions and transactions that name no
 * limits are not counted.
 */
describe.each(BACKENDS)('turn admission at commit (%s)', (kind) => {
  let db: Awaited<ReturnType<typeof openTestDatabase>>;
  let orgId: string;

  beforeAll(async () => {
    db = await openTestDatabase(kind);
    orgId = (await createOrgFixture(db, `admit-${kind}`)).id;
  });
  afterAll(async () => {
    await db?.dispose();
  });

  const sessionsOf = async (n: number, owner: string, extra: { parentSessionId?: string } = {}) => {
    const ids = Array.from({ length: n }, () => newId('ses'));
    await db.prisma.session.createMany({
      data: ids.map((id) => ({
        id,
        organizationId: orgId,
        ownerKind: 'human',
        ownerId: owner,
        computerId: 'cmp_none',
        cwd: '/',
        status: 'pending' as const,
        ...extra,
      })),
    });
    return ids;
  };
  /** beginTurn's transaction in miniature: the session marked running, the limits named, held open `holdMs`. */
  const start = async (id: string, limits: TurnLimits | undefined, holdMs = 0) => {
    try {
      await db.prisma.$transaction(async (tx) => {
        await tx.session.update({ where: { id }, data: { status: 'running', title: 'started' } });
        if (limits) await admitTurnAtCommit(tx, limits);
        if (holdMs) await sleep(holdMs);
      });
      return 'admitted';
    } catch (err) {
      if (turnNotAdmitted(err)) return 'refused';
      throw err;
    }
  };
  const finish = (ids: string[]) => db.prisma.session.updateMany({ where: { id: { in: ids } }, data: { status: 'idle' } });

  it('refuses the commit of a turn over its organization limit and keeps nothing of it', async () => {
    const ids = await sessionsOf(3, 'usr_a');
    const limits = { perOrganization: 2, perOwner: 10 };
    expect(await start(ids[0]!, limits)).toBe('admitted');
    expect(await start(ids[1]!, limits)).toBe('admitted');
    expect(await start(ids[2]!, limits)).toBe('refused');
    const refused = await db.prisma.session.findUniqueOrThrow({ where: { id: ids[2]! } });
    expect({ status: refused.status, title: refused.title }).toEqual({ status: 'pending', title: null });
    // A slot freed: the same turn is admitted.
    await finish([ids[0]!]);
    expect(await start(ids[2]!, limits)).toBe('admitted');
    await finish(ids);
  });

  it('counts an owner against its own limit while another owner starts', async () => {
    const mine = await sessionsOf(2, 'usr_b');
    const theirs = await sessionsOf(1, 'usr_c');
    const limits = { perOrganization: 10, perOwner: 1 };
    expect(await start(mine[0]!, limits)).toBe('admitted');
    expect(await start(mine[1]!, limits)).toBe('refused');
    expect(await start(theirs[0]!, limits)).toBe('admitted');
    await finish([...mine, ...theirs]);
  });

  it('does not count subagent sessions, or a start that names no limits', async () => {
    const [parent] = await sessionsOf(1, 'usr_d');
    const limits = { perOrganization: 1, perOwner: 1 };
    expect(await start(parent!, limits)).toBe('admitted');
    const [child] = await sessionsOf(1, 'usr_d', { parentSessionId: parent! });
    expect(await start(child!, limits)).toBe('admitted');
    const [resumed] = await sessionsOf(1, 'usr_d');
    expect(await start(resumed!, undefined)).toBe('admitted');
    await finish([parent!, child!, resumed!]);
  });

  it.runIf(kind === 'postgres')('admits no more than the limit when many turns commit at once', async () => {
    const ids = await sessionsOf(12, 'usr_e');
    const limits = { perOrganization: 5, perOwner: 100 };
    // Every transaction is open with its session marked running before any commits.
    const outcomes = await Promise.all(ids.map((id) => start(id, limits, 300)));
    expect(outcomes.filter((o) => o === 'admitted')).toHaveLength(5);
    expect(await db.prisma.session.count({ where: { id: { in: ids }, status: 'running' } })).toBe(5);
    await finish(ids);
  });
});
