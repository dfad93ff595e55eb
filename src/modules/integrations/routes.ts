import { managerOrHigher } from '../../auth/guards.ts';
import { defineRoute, type RouteSpec } from '../../http/route.ts';
import { CreateIntegrationBody, IntegrationIdParams, IntegrationListSchema, IntegrationSchema } from './schemas.ts';
import type { IntegrationsService } from './service.ts';

const BASE = '/api/v0/integrations/source-control';
const tags = ['Integrations'];

/** An agentplane extension: the organization's forge connections (members read, managers write). */
export function integrationRoutes(service: IntegrationsService): RouteSpec[] {
  return [
    defineRoute({
      tags,
      method: 'get',
      path: BASE,
      operationId: 'listSourceControlIntegrations',
      summary: "The organization's forge connections (tokens masked, and only for managers and owners)",
      responses: { 200: { description: 'Connections, oldest first', schema: IntegrationListSchema } },
      errors: [401, 500],
      handler: async ({ principal }) => ({ status: 200, body: await service.list(principal) }),
    }),
    defineRoute({
      tags,
      method: 'post',
      path: BASE,
      operationId: 'createSourceControlIntegration',
      summary: "Connect a forge: the token is verified with the forge's who-am-I call, then stored encrypted",
      guards: [managerOrHigher],
      body: CreateIntegrationBody,
      responses: { 201: { description: 'The connection', schema: IntegrationSchema } },
      errors: [400, 401, 403, 409, 500],
      handler: async ({ principal, body }) => ({ status: 201, body: await service.create(principal, body) }),
    }),
    defineRoute({
      tags,
      method: 'get',
      path: `${BASE}/{integrationId}`,
      operationId: 'getSourceControlIntegration',
      summary: 'One forge connection',
      params: IntegrationIdParams,
      responses: { 200: { description: 'The connection', schema: IntegrationSchema } },
      errors: [401, 404, 500],
      handler: async ({ principal, params }) => ({ status: 200, body: await service.get(principal, params.integrationId) }),
    }),
    defineRoute({
      tags,
      method: 'delete',
      path: `${BASE}/{integrationId}`,
      operationId: 'deleteSourceControlIntegration',
      summary: 'Remove a forge connection (computers keep the credential until their next refresh)',
      guards: [managerOrHigher],
      params: IntegrationIdParams,
      responses: { 204: { description: 'Removed' } },
      errors: [401, 403, 404, 500],
      handler: async ({ principal, params }) => {
        await service.remove(principal, params.integrationId);
        return { status: 204 };
      },
    }),
  ];
}
