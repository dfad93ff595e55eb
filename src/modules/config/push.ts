import { createHmac, timingSafeEqual } from 'node:crypto';
import { Unauthorized } from '../../lib/errors.ts';
import type { ConfigDeps } from './deps.ts';
import { configReconcileJob } from './job-kinds.ts';

const REFUSED =
  "The signature does not match: the forge must sign the payload with the source's webhook secret " +
  "(HMAC-SHA256 in X-Gitea-Signature, X-Forgejo-Signature or GitHub's X-Hub-Signature-256)";

/**
 * A forge's push webhook: verified with the source's secret by the forge's own scheme (Gitea and
 * Forgejo: hex HMAC-SHA256 of the body; GitHub: the same as `sha256=...`), then a reconcile of
 * the source now. An unknown source answers as a bad signature, so ids are not probed.
 */
export async function receivePush(
  deps: Pick<ConfigDeps, 'db' | 'secrets' | 'queue'>,
  sourceId: string,
  header: (name: string) => string | undefined,
  body: Buffer,
): Promise<{ queued: boolean; reason?: string }> {
  const source = await deps.db.configSource.findUnique({ where: { id: sourceId } });
  const sent = header('x-gitea-signature') ?? header('x-forgejo-signature') ?? header('x-hub-signature-256')?.replace(/^sha256=/, '');
  if (!source || !sent) throw new Unauthorized(REFUSED);
  const expected = createHmac('sha256', deps.secrets.open(source.sealedWebhookSecret)).update(body).digest();
  const given = Buffer.from(sent, 'hex');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw new Unauthorized(REFUSED);
  let ref: unknown;
  try {
    ref = (JSON.parse(body.toString('utf8')) as { ref?: unknown }).ref;
  } catch {
    ref = undefined;
  }
  if (typeof ref === 'string' && ref !== `refs/heads/${source.branch}`) {
    return { queued: false, reason: `a push to ${ref}; this source follows refs/heads/${source.branch}` };
  }
  await deps.queue.send(configReconcileJob, { sourceId: source.id });
  return { queued: true };
}
