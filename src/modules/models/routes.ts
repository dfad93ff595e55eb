import { defineRoute, type RouteSpec } from '../../http/route.ts';
import { ModelListResponse } from './schemas.ts';
import type { ModelsService } from './service.ts';

/** `GET /api/v0/models` (an agentplane extension, #34): what a session's model may be. */
export function modelRoutes(service: ModelsService): RouteSpec[] {
  return [
    defineRoute({
      tags: ['Models'],
      method: 'get',
      path: '/api/v0/models',
      operationId: 'listModels',
      summary:
        "The models this organization's sessions may use: the deployment's models file and the organization's custom models, as its model policy allows; " +
        'isDefault marks the one a session that names no model gets.',
      responses: { 200: { description: 'Models', schema: ModelListResponse } },
      errors: [401, 500],
      handler: async ({ principal }) => ({ status: 200, body: await service.list(principal) }),
    }),
  ];
}
