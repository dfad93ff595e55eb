import type { Principal } from '../../auth/principal.ts';
import { NotFound } from '../../lib/errors.ts';
import { poolConvergeJob } from '../computers/pool/job-kinds.ts';
import type { TemplatesDeps } from './deps.ts';
import { auditTemplate } from './rules.ts';

/** Computers made from the template keep what they were made with (its versions stay for their stacks). */
export async function removeTemplate(deps: TemplatesDeps, principal: Principal, templateId: string) {
  await deps.db.$transaction(async (tx) => {
    const now = deps.clock.now();
    const { count } = await tx.computerTemplate.updateMany({
      where: { id: templateId, organizationId: principal.organizationId, deletedAt: null },
      data: { deletedAt: now, liveName: null, updatedAt: now },
    });
    if (count === 0) throw new NotFound(`Computer template ${templateId} not found`);
    await auditTemplate(deps, tx, principal, templateId, 'deleted');
    await deps.queue?.send(poolConvergeJob, { organizationId: principal.organizationId }, { tx });
  });
}
