import { createHmac, timingSafeEqual } from 'node:crypto';
import { NotFound, Unauthorized } from '../../lib/errors.ts';
import type { TemplatesDeps } from './deps.ts';
import { templateTrackJob } from './job-kinds.ts';

const REFUSED =
  "The signature does not match: the forge must sign the payload with the template's webhook secret " +
  "(HMAC-SHA256 in X-Gitea-Signature, X-Forgejo-Signature or GitHub's X-Hub-Signature-256)";

/**
 * The forge's push webhook of a program template: verified with the template's secret by the
 * forge's own scheme (as config sources' webhooks are), then its ref is resolved at once. A push
 * to another branch or tag is acknowledged and ignored. Nothing changes on an unknown template (404)
 * or a bad signature (401).
 */
export async function receiveTemplatePush(
  deps: Pick<TemplatesDeps, 'db' | 'secrets' | 'queue'>,
  templateId: string,
  header: (name: string) => string | undefined,
  body: Buffer,
): Promise<{ queued: boolean; reason?: string }> {
  const template = await deps.db.computerTemplate.findFirst({ where: { id: templateId, deletedAt: null } });
  if (!template) throw new NotFound(`Computer template ${templateId} not found`);
  const sent = header('x-gitea-signature') ?? header('x-forgejo-signature') ?? header('x-hub-signature-256')?.replace(/^sha256=/, '');
  if (!template.sealedWebhookSecret || !sent) throw new Unauthorized(REFUSED);
  const expected = createHmac('sha256', deps.secrets.open(template.sealedWebhookSecret)).update(body).digest();
  const given = Buffer.from(sent, 'hex');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw new Unauthorized(REFUSED);
  if (!template.programRepository || !template.programRef) return { queued: false, reason: 'this template names no program' };
  let ref: unknown;
  try {
    ref = (JSON.parse(body.toString('utf8')) as { ref?: unknown }).ref;
  } catch {
    ref = undefined;
  }
  const follows = [`refs/heads/${template.programRef}`, `refs/tags/${template.programRef}`];
  if (typeof ref === 'string' && !follows.includes(ref)) {
    return { queued: false, reason: `a push to ${ref}; this template's program follows ${template.programRef}` };
  }
  await deps.queue?.send(templateTrackJob, { templateId: template.id });
  return { queued: true };
}
