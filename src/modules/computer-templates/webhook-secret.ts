import type { Principal } from '../../auth/principal.ts';
import { Conflict, NotFound } from '../../lib/errors.ts';
import { newWebhookSecret } from './create.ts';
import type { TemplatesDeps } from './deps.ts';
import { templateViews } from './read.ts';
import { auditTemplate } from './rules.ts';

/**
 * A new push webhook secret for a program template, shown in this answer once; the old one stops
 * verifying at once. The way to learn the secret of a template declared in configuration (whose
 * apply shows none) or to replace one that leaked.
 */
export async function rotateWebhookSecret(deps: TemplatesDeps, principal: Principal, templateId: string) {
  const webhook = newWebhookSecret(deps);
  const updated = await deps.db.$transaction(async (tx) => {
    const was = await tx.computerTemplate.findFirst({ where: { id: templateId, organizationId: principal.organizationId, deletedAt: null } });
    if (!was) throw new NotFound(`Computer template ${templateId} not found`);
    if (!was.programRepository) throw new Conflict(`Computer template ${templateId} has no program, so no push webhook: give it a program first`);
    const t = await tx.computerTemplate.update({ where: { id: templateId }, data: { sealedWebhookSecret: webhook.sealed, updatedAt: deps.clock.now() } });
    await auditTemplate(deps, tx, principal, templateId, 'webhook_secret_rotated', t);
    return t;
  });
  const [view] = await templateViews(deps, deps.db, [updated]);
  return { ...view!, webhookSecret: webhook.secret };
}
