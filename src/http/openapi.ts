import { OpenAPIRegistry, OpenApiGeneratorV3, type RouteConfig } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';
import { ErrorBodySchema, RequestErrorBodySchema, statusTitle } from './errors.ts';
import { usesRequestErrorBody } from './error-format.ts';
import type { RouteSpec } from './route.ts';

const API_VERSION = '0.1.0';

/** The OpenAPI document, built from the very route specs the app mounts. */
export function buildOpenApiDocument(routes: RouteSpec[], serverUrl?: string) {
  const registry = new OpenAPIRegistry();
  registry.registerComponent('securitySchemes', 'BearerAuth', {
    type: 'http',
    scheme: 'bearer',
    description: 'agentplane API key or JWT access token',
  });
  for (const route of routes) registry.registerPath(toRouteConfig(route));
  return new OpenApiGeneratorV3(registry.definitions).generateDocument({
    openapi: '3.0.1',
    info: {
      title: 'agentplane API',
      version: API_VERSION,
      description: 'Public API of agentplane. Requires authentication via the `Authorization: Bearer` header.',
    },
    servers: serverUrl ? [{ url: serverUrl }] : [],
    security: [{ BearerAuth: [] }],
  });
}

function toRouteConfig(route: RouteSpec): RouteConfig {
  const errorSchema = usesRequestErrorBody(route.path) ? RequestErrorBodySchema : ErrorBodySchema;
  const responses: RouteConfig['responses'] = {};
  for (const [status, r] of Object.entries(route.responses)) {
    responses[status] = r.schema
      ? { description: r.description, content: { [r.eventStream ? 'text/event-stream' : 'application/json']: { schema: r.schema } } }
      : { description: r.description };
  }
  for (const status of route.errors) {
    responses[status] = {
      description: statusTitle(status),
      content: { 'application/json': { schema: errorSchema } },
    };
  }
  return {
    method: route.method,
    path: route.path,
    operationId: route.operationId,
    summary: route.summary,
    tags: route.tags,
    security: route.auth === false ? [] : route.auth === 'optional' ? [{ BearerAuth: [] }, {}] : [{ BearerAuth: [] }],
    request: {
      params: route.params as z.ZodObject | undefined,
      query: route.query as z.ZodObject | undefined,
      body: route.body ? { content: { 'application/json': { schema: route.body } } } : undefined,
    },
    responses,
  };
}
