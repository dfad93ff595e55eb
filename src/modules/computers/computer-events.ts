import type { Db } from '../../db/client.ts';
import type { ProvisioningStep } from '../../generated/prisma/client.ts';
import { publish } from '../events/publish.ts';
import { POOL_OWNER } from './pool/pools.ts';

type Status = 'provisioning' | 'active' | 'error';

/** The organization event a computer's new status is, if any. */
const STATUS_EVENT = { active: 'computer.active', error: 'computer.error' } as const;

/** The events a computer's changes publish, each in the transaction of the change it describes. */
export const computerEvents = {
  /**
   * A new status: `computer.status` on its stream, and `computer.active` / `computer.error` for the
   * organization, unless a warm pool owns the computer (no one's yet: the organization hears of it
   * when a claim makes it someone's).
   */
  status: async (db: Db, computerId: string, status: Status, detail: Record<string, unknown> = {}) => {
    const announced =
      status !== 'provisioning' && !(await db.computer.findFirst({ where: { id: computerId, ownerKind: POOL_OWNER.kind }, select: { id: true } }));
    await publish(db, [
      { type: 'computer.status', computerId, data: { status, ...detail } },
      ...(announced ? [{ type: STATUS_EVENT[status as 'active' | 'error'], computerId, data: { computerId, status, ...detail } }] : []),
    ]);
  },

  steps: (db: Db, steps: Pick<ProvisioningStep, 'computerId' | 'id' | 'name' | 'status' | 'error' | 'startedAt' | 'completedAt'>[]) =>
    publish(
      db,
      steps.map((s) => ({
        type: 'computer.step' as const,
        computerId: s.computerId,
        data: { step: { id: s.id, name: s.name, status: s.status, error: s.error, startedAt: s.startedAt, completedAt: s.completedAt } },
      })),
    ),

  power: (db: Db, computerId: string, powerState: 'running' | 'paused') => publish(db, { type: 'computer.power', computerId, data: { powerState } }),

  deleted: (db: Db, computer: { id: string; organizationId: string; name: string }) =>
    publish(db, {
      type: 'computer.deleted',
      computerId: computer.id,
      organizationId: computer.organizationId,
      data: { computerId: computer.id, name: computer.name },
    }),

  tornDown: (db: Db, computerId: string) => publish(db, { type: 'computer.teardown', computerId, data: { status: 'completed' } }),
};
