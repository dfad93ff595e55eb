import { z } from 'zod';
import { organizationEventTypes } from '../events/types.ts';

export const WebhookIdParams = z.object({ webhookId: z.string().min(1).meta({ description: 'Webhook endpoint id' }) });
export const DeliveryIdParams = WebhookIdParams.extend({ deliveryId: z.string().min(1).meta({ description: 'Delivery id (the webhook-id header sent)' }) });

const EventTypes = z
  .array(z.enum(organizationEventTypes))
  .min(1)
  .max(organizationEventTypes.length)
  .refine((types) => new Set(types).size === types.length, 'must not repeat a type')
  .meta({ description: `Event types to deliver: ${organizationEventTypes.join(', ')}` });

const Url = z
  .url({ protocol: /^https?$/, error: 'must be an http(s) URL' })
  .max(2048)
  .meta({ description: 'Where deliveries are POSTed; checked by the egress policy (AGENTPLANE_EGRESS_ALLOW)' });

const Description = z.string().max(1024);

export const CreateWebhookBody = z.strictObject({ url: Url, eventTypes: EventTypes, description: Description.optional() });

export const UpdateWebhookBody = z.strictObject({
  url: Url.optional(),
  eventTypes: EventTypes.optional(),
  description: Description.nullable().optional(),
  enabled: z.boolean().optional().meta({ description: 'false disables deliveries; true re-enables an endpoint, also one the control plane disabled' }),
});

export const WebhookSchema = z
  .object({
    id: z.string(),
    url: z.string(),
    eventTypes: z.array(z.string()),
    description: z.string().optional(),
    status: z.enum(['enabled', 'disabled']),
    disabledReason: z.string().optional().meta({ description: 'Why the control plane disabled it (absent when a caller did, or enabled)' }),
    failingSince: z.number().int().optional().meta({ description: 'Unix ms of the first failed attempt since the last success' }),
    createdAt: z.number().int(),
    updatedAt: z.number().int(),
  })
  .meta({ id: 'Webhook' });

export const CreatedWebhookSchema = WebhookSchema.extend({
  secret: z.string().meta({ description: 'The signing secret (whsec_...), shown only in this response' }),
}).meta({ id: 'CreatedWebhook' });

export const WebhookListResponse = z.object({ webhooks: z.array(WebhookSchema) });

const Attempt = z.object({
  at: z.number().int(),
  durationMs: z.number().int(),
  status: z.number().int().optional().meta({ description: 'HTTP status answered, absent when there was no answer' }),
  error: z.string().optional(),
});

export const DeliverySchema = z
  .object({
    id: z.string(),
    eventId: z.string(),
    eventType: z.string(),
    status: z.enum(['pending', 'queued', 'sending', 'succeeded', 'failed']),
    attempts: z.number().int(),
    nextAttemptAt: z.number().int().optional(),
    lastStatus: z.number().int().optional(),
    lastError: z.string().optional(),
    log: z.array(Attempt),
    payload: z.string().meta({ description: 'The exact body sent (signed as is)' }),
    createdAt: z.number().int(),
    updatedAt: z.number().int(),
  })
  .meta({ id: 'WebhookDelivery' });

export const DeliveryListQuery = z.strictObject({
  status: z.enum(['pending', 'queued', 'sending', 'succeeded', 'failed']).optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
});
export const DeliveryListResponse = z.object({ deliveries: z.array(DeliverySchema) });

export type CreateWebhookInput = z.infer<typeof CreateWebhookBody>;
export type UpdateWebhookInput = z.infer<typeof UpdateWebhookBody>;
export type AttemptLog = z.infer<typeof Attempt>;
