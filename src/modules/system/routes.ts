import { defineRoute, type RouteSpec } from '../../http/route.ts';
import { HealthSchema, OpenApiDocumentSchema, ReadinessSchema } from './schemas.ts';
import type { SystemService } from './service.ts';

/** Liveness, readiness and the API description; all public. */
export function systemRoutes(service: SystemService, openApiDocument: () => unknown): RouteSpec[] {
  return [
    defineRoute({
      method: 'get',
      path: '/api/v0/openapi.json',
      operationId: 'getOpenApiDocument',
      summary: 'The OpenAPI description of this API',
      tags: ['System'],
      auth: false,
      responses: { 200: { description: 'OpenAPI 3 document', schema: OpenApiDocumentSchema } },
      errors: [500],
      handler: async () => ({ status: 200, body: openApiDocument() }),
    }),
    defineRoute({
      method: 'get',
      path: '/healthz',
      operationId: 'getLiveness',
      summary: 'Liveness: the process serves requests',
      tags: ['System'],
      auth: false,
      responses: { 200: { description: 'Alive', schema: HealthSchema } },
      errors: [500],
      handler: async () => ({ status: 200, body: { status: 'ok' } }),
    }),
    defineRoute({
      method: 'get',
      path: '/readyz',
      operationId: 'getReadiness',
      summary: 'Readiness: database reachable and migrations current',
      tags: ['System'],
      auth: false,
      responses: {
        200: { description: 'Ready', schema: ReadinessSchema },
        503: { description: 'Not ready', schema: ReadinessSchema },
      },
      errors: [500],
      handler: async () => {
        const body = await service.readiness();
        return { status: body.status === 'ready' ? 200 : 503, body };
      },
    }),
  ];
}
