import { managerOrHigher } from '../../auth/guards.ts';
import { defineRoute, type RouteSpec } from '../../http/route.ts';
import {
  ComputerTemplateSchema,
  CreatedTemplateSchema,
  CreateTemplateBody,
  PushResponse,
  TemplateIdParams,
  TemplateListResponse,
  TemplateVersionSchema,
  UpdateTemplateBody,
  VersionIdParams,
  VersionsQuery,
  VersionsResponse,
} from './schemas.ts';
import type { TemplatesService } from './service.ts';

const tags = ['Computer Templates'];

/** agentplane extension: every member reads the organization's templates; managers and owners write them. */
export function templateRoutes(service: TemplatesService): RouteSpec[] {
  return [
    defineRoute({
      tags,
      method: 'get',
      path: '/api/v0/computer-templates',
      operationId: 'listComputerTemplates',
      summary: "The organization's computer templates, newest first",
      responses: { 200: { description: 'Templates', schema: TemplateListResponse } },
      errors: [401, 500],
      handler: async ({ principal }) => ({ status: 200, body: { templates: await service.list(principal) } }),
    }),
    defineRoute({
      tags,
      guards: [managerOrHigher],
      method: 'post',
      path: '/api/v0/computer-templates',
      operationId: 'createComputerTemplate',
      summary: 'Create a computer template (managers and owners)',
      body: CreateTemplateBody,
      responses: { 201: { description: 'The template, with its push webhook secret (shown once)', schema: CreatedTemplateSchema } },
      errors: [400, 401, 403, 409, 500],
      handler: async ({ principal, body }) => ({ status: 201, body: await service.create(principal, body) }),
    }),
    defineRoute({
      tags,
      method: 'get',
      path: '/api/v0/computer-templates/{templateId}',
      operationId: 'getComputerTemplate',
      summary: 'A computer template',
      params: TemplateIdParams,
      responses: { 200: { description: 'The template', schema: ComputerTemplateSchema } },
      errors: [401, 404, 500],
      handler: async ({ principal, params }) => ({ status: 200, body: await service.get(principal, params.templateId) }),
    }),
    defineRoute({
      tags,
      guards: [managerOrHigher],
      method: 'patch',
      path: '/api/v0/computer-templates/{templateId}',
      operationId: 'updateComputerTemplate',
      summary: 'Change a computer template (managers and owners); computers made from it are not changed',
      params: TemplateIdParams,
      body: UpdateTemplateBody,
      responses: {
        200: { description: 'The template (with a new webhook secret when its first program gave it one)', schema: CreatedTemplateSchema },
      },
      errors: [400, 401, 403, 404, 409, 500],
      handler: async ({ principal, params, body }) => ({ status: 200, body: await service.update(principal, params.templateId, body) }),
    }),
    defineRoute({
      tags,
      guards: [managerOrHigher],
      method: 'delete',
      path: '/api/v0/computer-templates/{templateId}',
      operationId: 'deleteComputerTemplate',
      summary: 'Delete a computer template (managers and owners); computers made from it stay',
      params: TemplateIdParams,
      responses: { 204: { description: 'Deleted' } },
      errors: [401, 403, 404, 500],
      handler: async ({ principal, params }) => {
        await service.remove(principal, params.templateId);
        return { status: 204 };
      },
    }),
    defineRoute({
      tags,
      method: 'get',
      path: '/api/v0/computer-templates/{templateId}/versions',
      operationId: 'listComputerTemplateVersions',
      summary: 'The commits a program template has resolved, newest first, with their previews and the computers running each',
      params: TemplateIdParams,
      query: VersionsQuery,
      responses: { 200: { description: 'Versions', schema: VersionsResponse } },
      errors: [400, 401, 404, 500],
      handler: async ({ principal, params, query }) => ({ status: 200, body: await service.versions(principal, params.templateId, query) }),
    }),
    defineRoute({
      tags,
      method: 'get',
      path: '/api/v0/computer-templates/{templateId}/versions/{versionId}',
      operationId: 'getComputerTemplateVersion',
      summary: 'A version of a program template',
      params: VersionIdParams,
      responses: { 200: { description: 'The version', schema: TemplateVersionSchema } },
      errors: [401, 404, 500],
      handler: async ({ principal, params }) => ({ status: 200, body: await service.version(principal, params.templateId, params.versionId) }),
    }),
    defineRoute({
      tags,
      auth: false,
      rawBody: true,
      method: 'post',
      path: '/api/v0/computer-templates/{templateId}/webhook',
      operationId: 'computerTemplatePush',
      summary: "The forge's push webhook: verified with the template's secret, then its program's ref is resolved at once",
      params: TemplateIdParams,
      responses: { 202: { description: 'Verified; queued, or ignored (a push to another ref)', schema: PushResponse } },
      errors: [401, 404, 500],
      handler: async ({ params, header, rawBody }) => ({ status: 202, body: await service.push(params.templateId, header, rawBody) }),
    }),
  ];
}
