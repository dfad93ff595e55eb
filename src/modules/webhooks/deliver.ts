import { Webhook } from 'standardwebhooks';
import type { PrismaClient } from '../../db/client.ts';
import type { EgressGuard } from '../../egress/guard.ts';
import type { Clock } from '../../lib/clock.ts';
import type { SecretBox } from '../../lib/secret-box.ts';
import { disableFailingEndpoint } from './disable.ts';
import type { AttemptLog } from './schemas.ts';
import type { WebhookSettings } from './settings.ts';
import { recordWebhookDelivery } from '../../observability/metrics.ts';

export interface DeliverDeps {
  db: PrismaClient;
  clock: Clock;
  secrets: Pick<SecretBox, 'open'>;
  egress: Pick<EgressGuard, 'fetch'>;
  settings: WebhookSettings;
}

/** Past the request timeout, how long an attempt's claim outlives it before another may take over. */
const LEASE_MARGIN_MS = 60_000;
const ERROR_CHARS = 500;

/**
 * One attempt of a queued delivery: claimed (compare-and-set, so a duplicate job does nothing),
 * signed per Standard Webhooks with the endpoint's secret, POSTed through the egress guard
 * without following redirects, and recorded in the delivery's log. A 2xx succeeds; anything else
 * schedules the next retry from the schedule, or fails the delivery after the last, and may
 * disable the endpoint (disable.ts). Returns the endpoint id, so its next attempts can be queued.
 */
export async function attemptDelivery(deps: DeliverDeps, deliveryId: string, signal: AbortSignal): Promise<string | undefined> {
  const now = deps.clock.now();
  const [delivery] = await deps.db.webhookDelivery.updateManyAndReturn({
    where: { id: deliveryId, OR: [{ status: 'queued' }, { status: 'sending', leaseUntil: { lt: now } }] },
    data: { status: 'sending', leaseUntil: new Date(now.getTime() + deps.settings.timeoutMs + LEASE_MARGIN_MS), attempts: { increment: 1 }, updatedAt: now },
  });
  if (!delivery) return undefined;
  const endpoint = await deps.db.webhookEndpoint.findUnique({ where: { id: delivery.endpointId } });
  if (!endpoint || endpoint.status !== 'enabled') {
    await deps.db.webhookDelivery.update({
      where: { id: delivery.id },
      data: { status: 'failed', lastError: 'the endpoint was disabled', leaseUntil: null, attempts: { decrement: 1 }, updatedAt: now },
    });
    return undefined;
  }

  const sentAt = deps.clock.now();
  const started = performance.now();
  let status: number | undefined;
  let error: string | undefined;
  try {
    const signature = new Webhook(deps.secrets.open(endpoint.sealedSecret)).sign(delivery.id, sentAt, delivery.payload);
    const res = await deps.egress.fetch(endpoint.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'user-agent': 'agentplane-webhooks',
        'webhook-id': delivery.id,
        'webhook-timestamp': String(Math.floor(sentAt.getTime() / 1000)),
        'webhook-signature': signature,
      },
      body: delivery.payload,
      redirect: 'manual',
      signal: AbortSignal.any([AbortSignal.timeout(deps.settings.timeoutMs), signal]),
    });
    status = res.status;
    const text = await res.text().catch(() => '');
    if (status < 200 || status > 299) error = `HTTP ${status}${text ? `: ${text.slice(0, ERROR_CHARS)}` : ''}`;
  } catch (err) {
    if (signal.aborted) throw err;
    const cause = err instanceof Error && err.name === 'TimeoutError' ? `no answer within ${deps.settings.timeoutMs} ms` : messageOf(err);
    error = cause.slice(0, ERROR_CHARS);
  }
  const entry: AttemptLog = {
    at: sentAt.getTime(),
    durationMs: Math.round(performance.now() - started),
    ...(status !== undefined ? { status } : {}),
    ...(error ? { error } : {}),
  };
  await record(deps, delivery.id, endpoint.id, delivery.attempts, entry);
  return endpoint.id;
}

async function record(deps: DeliverDeps, deliveryId: string, endpointId: string, attempts: number, entry: AttemptLog): Promise<void> {
  const now = deps.clock.now();
  const ok = entry.error === undefined;
  recordWebhookDelivery(ok ? 'delivered' : 'failed');
  await deps.db.$transaction(async (tx) => {
    let live = true;
    if (ok) {
      await tx.webhookEndpoint.updateMany({ where: { id: endpointId, failingSince: { not: null } }, data: { failingSince: null } });
    } else {
      await tx.webhookEndpoint.updateMany({ where: { id: endpointId, failingSince: null }, data: { failingSince: now } });
      const endpoint = await tx.webhookEndpoint.findUnique({ where: { id: endpointId } });
      const sustained = endpoint?.failingSince && now.getTime() - endpoint.failingSince.getTime() >= deps.settings.disableAfterMs;
      if (endpoint?.status === 'enabled' && sustained) await disableFailingEndpoint(tx, endpoint, now);
      live = endpoint?.status === 'enabled' && !sustained;
    }
    // No retry is scheduled for an endpoint that is (or was just) disabled: redelivery sends it later.
    const retryIn = live ? deps.settings.retryDelaysMs[attempts - 1] : undefined;
    const next = ok ? 'succeeded' : retryIn === undefined ? 'failed' : 'pending';
    await tx.$executeRaw`
      UPDATE webhook_deliveries SET
        status = ${next}, last_status = ${entry.status ?? null}::int, last_error = ${entry.error ?? null},
        next_attempt_at = ${retryIn === undefined || ok ? null : new Date(now.getTime() + retryIn)}, lease_until = NULL,
        log = log || ${JSON.stringify([entry])}::jsonb, updated_at = ${now}
      WHERE id = ${deliveryId} AND status = 'sending'`;
  });
}

function messageOf(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = err.cause instanceof Error ? `: ${err.cause.message}` : '';
  return `${err.message}${cause}`;
}
