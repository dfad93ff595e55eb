import { managerOrHigher } from '../../auth/guards.ts';
import { defineRoute, type RouteSpec } from '../../http/route.ts';
import {
  CreatedWebhookSchema,
  CreateWebhookBody,
  DeliveryIdParams,
  DeliveryListQuery,
  DeliveryListResponse,
  DeliverySchema,
  UpdateWebhookBody,
  WebhookIdParams,
  WebhookListResponse,
  WebhookSchema,
} from './schemas.ts';
import type { WebhooksService } from './service.ts';

/** Webhook endpoints (an agentplane extension): managers and owners of the organization. */
export function webhookRoutes(service: WebhooksService): RouteSpec[] {
  const common = { tags: ['Webhooks'], guards: [managerOrHigher] };
  return [
    defineRoute({
      ...common,
      method: 'post',
      path: '/api/v0/webhooks',
      operationId: 'createWebhook',
      summary: 'Subscribes a URL to event types; answers the signing secret (whsec_...) once. Deliveries are signed per Standard Webhooks.',
      body: CreateWebhookBody,
      responses: { 201: { description: 'The endpoint and its secret', schema: CreatedWebhookSchema } },
      errors: [400, 401, 403, 500],
      handler: async ({ principal, body }) => ({ status: 201, body: await service.create(principal, body), headers: { 'cache-control': 'no-store' } }),
    }),
    defineRoute({
      ...common,
      method: 'get',
      path: '/api/v0/webhooks',
      operationId: 'listWebhooks',
      summary: "The organization's webhook endpoints, newest first.",
      responses: { 200: { description: 'Endpoints', schema: WebhookListResponse } },
      errors: [401, 403, 500],
      handler: async ({ principal }) => ({ status: 200, body: await service.list(principal) }),
    }),
    defineRoute({
      ...common,
      method: 'get',
      path: '/api/v0/webhooks/{webhookId}',
      operationId: 'getWebhook',
      summary: 'One webhook endpoint (never its secret).',
      params: WebhookIdParams,
      responses: { 200: { description: 'The endpoint', schema: WebhookSchema } },
      errors: [401, 403, 404, 500],
      handler: async ({ principal, params }) => ({ status: 200, body: await service.get(principal, params.webhookId) }),
    }),
    defineRoute({
      ...common,
      method: 'patch',
      path: '/api/v0/webhooks/{webhookId}',
      operationId: 'updateWebhook',
      summary: 'Changes the URL, event types or description, or disables / re-enables the endpoint.',
      params: WebhookIdParams,
      body: UpdateWebhookBody,
      responses: { 200: { description: 'The endpoint', schema: WebhookSchema } },
      errors: [400, 401, 403, 404, 500],
      handler: async ({ principal, params, body }) => ({ status: 200, body: await service.update(principal, params.webhookId, body) }),
    }),
    defineRoute({
      ...common,
      method: 'delete',
      path: '/api/v0/webhooks/{webhookId}',
      operationId: 'deleteWebhook',
      summary: 'Deletes the endpoint and its delivery log.',
      params: WebhookIdParams,
      responses: { 204: { description: 'Deleted' } },
      errors: [401, 403, 404, 500],
      handler: async ({ principal, params }) => {
        await service.remove(principal, params.webhookId);
        return { status: 204 };
      },
    }),
    defineRoute({
      ...common,
      method: 'get',
      path: '/api/v0/webhooks/{webhookId}/deliveries',
      operationId: 'listWebhookDeliveries',
      summary: "The endpoint's delivery log, newest first: each event sent, its attempts and their answers.",
      params: WebhookIdParams,
      query: DeliveryListQuery,
      responses: { 200: { description: 'Deliveries', schema: DeliveryListResponse } },
      errors: [400, 401, 403, 404, 500],
      handler: async ({ principal, params, query }) => ({ status: 200, body: await service.deliveries(principal, params.webhookId, query) }),
    }),
    defineRoute({
      ...common,
      method: 'get',
      path: '/api/v0/webhooks/{webhookId}/deliveries/{deliveryId}',
      operationId: 'getWebhookDelivery',
      summary: 'One delivery with every attempt.',
      params: DeliveryIdParams,
      responses: { 200: { description: 'The delivery', schema: DeliverySchema } },
      errors: [401, 403, 404, 500],
      handler: async ({ principal, params }) => ({ status: 200, body: await service.delivery(principal, params.webhookId, params.deliveryId) }),
    }),
    defineRoute({
      ...common,
      method: 'post',
      path: '/api/v0/webhooks/{webhookId}/deliveries/{deliveryId}/redeliver',
      operationId: 'redeliverWebhookDelivery',
      summary: 'Sends a finished delivery again (same webhook-id and body) as a new series of attempts.',
      params: DeliveryIdParams,
      responses: { 202: { description: 'Queued again', schema: DeliverySchema } },
      errors: [401, 403, 404, 409, 500],
      handler: async ({ principal, params }) => ({ status: 202, body: await service.redeliver(principal, params.webhookId, params.deliveryId) }),
    }),
  ];
}
