import type { WebhookDelivery, WebhookEndpoint } from '../../generated/prisma/client.ts';
import type { AttemptLog } from './schemas.ts';

export function webhookView(w: WebhookEndpoint) {
  return {
    id: w.id,
    url: w.url,
    eventTypes: w.eventTypes,
    ...(w.description ? { description: w.description } : {}),
    status: w.status as 'enabled' | 'disabled',
    ...(w.disabledReason ? { disabledReason: w.disabledReason } : {}),
    ...(w.failingSince ? { failingSince: w.failingSince.getTime() } : {}),
    createdAt: w.createdAt.getTime(),
    updatedAt: w.updatedAt.getTime(),
  };
}

export function deliveryView(d: WebhookDelivery) {
  return {
    id: d.id,
    eventId: d.eventId.toString(),
    eventType: d.eventType,
    status: d.status as 'pending' | 'queued' | 'sending' | 'succeeded' | 'failed',
    attempts: d.attempts,
    ...(d.status === 'pending' && d.nextAttemptAt ? { nextAttemptAt: d.nextAttemptAt.getTime() } : {}),
    ...(d.lastStatus !== null ? { lastStatus: d.lastStatus } : {}),
    ...(d.lastError ? { lastError: d.lastError } : {}),
    log: d.log as AttemptLog[],
    payload: d.payload,
    createdAt: d.createdAt.getTime(),
    updatedAt: d.updatedAt.getTime(),
  };
}
