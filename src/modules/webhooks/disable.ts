import type { Db } from '../../db/client.ts';
import type { WebhookEndpoint } from '../../generated/prisma/client.ts';
import { recordAudit } from '../audit/record.ts';
import { publish } from '../events/publish.ts';
import { WEBHOOK_AUDIT_EVENT } from './service.ts';

/** The audit source of what the delivery worker does on its own. */
const DELIVERY_SOURCE = 'webhook_delivery';

/**
 * Disables an endpoint that has failed without a success for the whole disable window: its
 * undelivered deliveries fail (redelivery from the log sends them once it is re-enabled), and
 * the change is audited and published as `webhook.disabled`, in one transaction. False when it
 * was disabled already.
 */
export async function disableFailingEndpoint(tx: Db, endpoint: WebhookEndpoint, now: Date): Promise<boolean> {
  const since = endpoint.failingSince ?? now;
  const reason = `every delivery attempt has failed since ${since.toISOString()}`;
  const { count } = await tx.webhookEndpoint.updateMany({
    where: { id: endpoint.id, status: 'enabled' },
    data: { status: 'disabled', disabledReason: reason, updatedAt: now },
  });
  if (count === 0) return false;
  await tx.webhookDelivery.updateMany({
    where: { endpointId: endpoint.id, status: { in: ['pending', 'queued'] } },
    data: { status: 'failed', lastError: 'the endpoint was disabled after sustained failure', leaseUntil: null, updatedAt: now },
  });
  await recordAudit(tx, {
    organizationId: endpoint.organizationId,
    eventType: WEBHOOK_AUDIT_EVENT,
    source: DELIVERY_SOURCE,
    target: { webhookId: endpoint.id },
    before: { url: endpoint.url, eventTypes: endpoint.eventTypes, status: 'enabled' },
    after: { url: endpoint.url, eventTypes: endpoint.eventTypes, status: 'disabled' },
    payload: { action: 'disabled', reason },
    at: now,
  });
  await publish(tx, {
    type: 'webhook.disabled',
    organizationId: endpoint.organizationId,
    data: { webhookId: endpoint.id, url: endpoint.url, reason, failingSince: since.toISOString() },
  });
  return true;
}
