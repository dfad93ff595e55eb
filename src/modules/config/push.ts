import { pushedRef, signatureRefused, verifyForgePush } from '../../http/forge-push.ts';
import { Unauthorized } from '../../lib/errors.ts';
import type { ConfigDeps } from './deps.ts';
import { configReconcileJob } from './job-kinds.ts';

const REFUSED = signatureRefused("source's");

/**
 * A forge's push webhook: verified with the source's secret (http/forge-push.ts), then a
 * reconcile of the source now. An unknown source answers as a bad signature, so ids are not probed.
 */
export async function receivePush(
  deps: Pick<ConfigDeps, 'db' | 'secrets' | 'queue'>,
  sourceId: string,
  header: (name: string) => string | undefined,
  body: Buffer,
): Promise<{ queued: boolean; reason?: string }> {
  const source = await deps.db.configSource.findUnique({ where: { id: sourceId } });
  if (!source) throw new Unauthorized(REFUSED);
  verifyForgePush(deps.secrets.open(source.sealedWebhookSecret), header, body, REFUSED);
  const ref = pushedRef(body);
  if (ref !== undefined && ref !== `refs/heads/${source.branch}`) {
    return { queued: false, reason: `a push to ${ref}; this source follows refs/heads/${source.branch}` };
  }
  await deps.queue.send(configReconcileJob, { sourceId: source.id });
  return { queued: true };
}
