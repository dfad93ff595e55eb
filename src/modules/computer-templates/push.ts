import { pushedRef, signatureRefused, verifyForgePush } from '../../http/forge-push.ts';
import { NotFound } from '../../lib/errors.ts';
import type { TemplatesDeps } from './deps.ts';
import { templateTrackJob } from './job-kinds.ts';

/**
 * The forge's push webhook of a program template: verified with the template's secret as config
 * sources' webhooks are (http/forge-push.ts), then its ref is resolved at once. A push to another
 * branch or tag is acknowledged and ignored. Nothing changes on an unknown template (404) or a bad
 * signature (401).
 */
export async function receiveTemplatePush(
  deps: Pick<TemplatesDeps, 'db' | 'secrets' | 'queue'>,
  templateId: string,
  header: (name: string) => string | undefined,
  body: Buffer,
): Promise<{ queued: boolean; reason?: string }> {
  const template = await deps.db.computerTemplate.findFirst({ where: { id: templateId, deletedAt: null } });
  if (!template) throw new NotFound(`Computer template ${templateId} not found`);
  const secret = template.sealedWebhookSecret ? deps.secrets.open(template.sealedWebhookSecret) : null;
  verifyForgePush(secret, header, body, signatureRefused("template's"));
  if (!template.programRef) return { queued: false, reason: 'this template names no program' };
  const ref = pushedRef(body);
  const follows = [`refs/heads/${template.programRef}`, `refs/tags/${template.programRef}`];
  if (ref !== undefined && !follows.includes(ref)) {
    return { queued: false, reason: `a push to ${ref}; this template's program follows ${template.programRef}` };
  }
  await deps.queue?.send(templateTrackJob, { templateId: template.id });
  return { queued: true };
}
