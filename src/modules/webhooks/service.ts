import type { Principal } from '../../auth/principal.ts';
import type { Db, Prisma, PrismaClient } from '../../db/client.ts';
import type { EgressGuard } from '../../egress/guard.ts';
import type { WebhookEndpoint } from '../../generated/prisma/client.ts';
import type { Clock } from '../../lib/clock.ts';
import { Conflict, NotFound } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import type { SecretBox } from '../../lib/secret-box.ts';
import { PUBLIC_API_SOURCE, recordAudit } from '../audit/record.ts';
import type { CreateWebhookInput, UpdateWebhookInput } from './schemas.ts';
import { newSigningSecret } from './secret.ts';
import { deliveryView, webhookView } from './views.ts';

export interface WebhooksDeps {
  db: PrismaClient;
  clock: Clock;
  secrets: Pick<SecretBox, 'seal'>;
  egress: Pick<EgressGuard, 'screen'>;
}

/** Audit event type of every change to a webhook endpoint, by a caller or by the control plane. */
export const WEBHOOK_AUDIT_EVENT = 'webhook_change';

async function endpointOf(db: Db, organizationId: string, webhookId: string): Promise<WebhookEndpoint> {
  const endpoint = await db.webhookEndpoint.findFirst({ where: { id: webhookId, organizationId } });
  if (!endpoint) throw new NotFound(`Webhook ${webhookId} not found`);
  return endpoint;
}

const audited = (w: WebhookEndpoint) => ({ url: w.url, eventTypes: w.eventTypes, status: w.status });

/**
 * Webhook endpoints of an organization (agentplane extension): subscriptions, their delivery log
 * and redelivery. Deliveries themselves run as background jobs (dispatch.ts, deliver.ts).
 */
export function createWebhooksService(deps: WebhooksDeps) {
  const { db, clock } = deps;
  const audit = (tx: Db, principal: Principal, id: string, action: string, before: WebhookEndpoint | null, after: WebhookEndpoint | null) =>
    recordAudit(tx, {
      organizationId: principal.organizationId,
      eventType: WEBHOOK_AUDIT_EVENT,
      source: PUBLIC_API_SOURCE,
      actor: principal,
      target: { webhookId: id },
      before: before ? audited(before) : null,
      after: after ? audited(after) : null,
      payload: { action },
      at: clock.now(),
    });

  return {
    /** The secret is answered here once; only its sealed form is stored. Config may bring its own (a secret it holds). */
    async create(principal: Principal, input: CreateWebhookInput, opts: { secret?: string } = {}) {
      await deps.egress.screen(input.url);
      const secret = opts.secret ?? newSigningSecret();
      const now = clock.now();
      const created = await db.$transaction(async (tx) => {
        const row = await tx.webhookEndpoint.create({
          data: {
            id: newId('whk'),
            organizationId: principal.organizationId,
            url: input.url,
            eventTypes: input.eventTypes,
            description: input.description ?? null,
            sealedSecret: deps.secrets.seal(secret),
            createdBy: principal.kind === 'user' ? principal.userId : principal.serviceAccountId,
            createdAt: now,
            updatedAt: now,
          },
        });
        await audit(tx, principal, row.id, 'created', null, row);
        return row;
      });
      return { ...webhookView(created), secret };
    },

    async list(principal: Principal) {
      const rows = await db.webhookEndpoint.findMany({ where: { organizationId: principal.organizationId }, orderBy: { createdAt: 'desc' } });
      return { webhooks: rows.map(webhookView) };
    },

    async get(principal: Principal, webhookId: string) {
      return webhookView(await endpointOf(db, principal.organizationId, webhookId));
    },

    /** Re-enabling clears the failure record, so a fresh outage is needed to disable it again. */
    async update(principal: Principal, webhookId: string, input: UpdateWebhookInput) {
      if (input.url !== undefined) await deps.egress.screen(input.url);
      return db.$transaction(async (tx) => {
        const before = await endpointOf(tx, principal.organizationId, webhookId);
        const data: Prisma.WebhookEndpointUpdateInput = {
          ...(input.url !== undefined ? { url: input.url } : {}),
          ...(input.eventTypes !== undefined ? { eventTypes: input.eventTypes } : {}),
          ...(input.description !== undefined ? { description: input.description } : {}),
          ...(input.enabled === true && before.status !== 'enabled' ? { status: 'enabled', disabledReason: null, failingSince: null } : {}),
          ...(input.enabled === false && before.status !== 'disabled' ? { status: 'disabled', disabledReason: null } : {}),
        };
        if (Object.keys(data).length === 0) return webhookView(before);
        const after = await tx.webhookEndpoint.update({ where: { id: before.id }, data: { ...data, updatedAt: clock.now() } });
        await audit(tx, principal, before.id, 'updated', before, after);
        return webhookView(after);
      });
    },

    /** Deletes the endpoint and its delivery log; attempts under way finish, none start. */
    async remove(principal: Principal, webhookId: string) {
      await db.$transaction(async (tx) => {
        const before = await endpointOf(tx, principal.organizationId, webhookId);
        await tx.webhookEndpoint.delete({ where: { id: before.id } });
        await audit(tx, principal, before.id, 'deleted', before, null);
      });
    },

    async deliveries(principal: Principal, webhookId: string, query: { status?: string; limit: number }) {
      const endpoint = await endpointOf(db, principal.organizationId, webhookId);
      const rows = await db.webhookDelivery.findMany({
        where: { endpointId: endpoint.id, ...(query.status ? { status: query.status } : {}) },
        orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
        take: query.limit,
      });
      return { deliveries: rows.map(deliveryView) };
    },

    async delivery(principal: Principal, webhookId: string, deliveryId: string) {
      const endpoint = await endpointOf(db, principal.organizationId, webhookId);
      const row = await db.webhookDelivery.findFirst({ where: { id: deliveryId, endpointId: endpoint.id } });
      if (!row) throw new NotFound(`Delivery ${deliveryId} of webhook ${webhookId} not found`);
      return deliveryView(row);
    },

    /**
     * Sends a delivery again with the same id and body (receivers deduplicate on webhook-id), as
     * a new series of attempts; its log keeps the earlier ones.
     */
    async redeliver(principal: Principal, webhookId: string, deliveryId: string) {
      return db.$transaction(async (tx) => {
        const endpoint = await endpointOf(tx, principal.organizationId, webhookId);
        if (endpoint.status !== 'enabled') throw new Conflict(`Webhook ${webhookId} is disabled; enable it (PATCH enabled: true) before redelivering`);
        const row = await tx.webhookDelivery.findFirst({ where: { id: deliveryId, endpointId: endpoint.id } });
        if (!row) throw new NotFound(`Delivery ${deliveryId} of webhook ${webhookId} not found`);
        if (['pending', 'queued', 'sending'].includes(row.status)) {
          throw new Conflict(`Delivery ${deliveryId} is ${row.status}; it is already being delivered`);
        }
        const now = clock.now();
        const again = await tx.webhookDelivery.update({
          where: { id: row.id },
          data: { status: 'pending', attempts: 0, nextAttemptAt: now, leaseUntil: null, updatedAt: now },
        });
        await audit(tx, principal, endpoint.id, 'redelivered', endpoint, endpoint);
        return deliveryView(again);
      });
    },
  };
}

export type WebhooksService = ReturnType<typeof createWebhooksService>;
