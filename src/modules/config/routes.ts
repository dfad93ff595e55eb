import { z } from 'zod';
import { managerOrHigher } from '../../auth/guards.ts';
import { defineRoute, type RouteSpec } from '../../http/route.ts';
import { documentJsonSchema } from './json-schema.ts';
import {
  ApplyResponse,
  ExportResponse,
  PageQuerySchema,
  PlanBody,
  PlanSchema,
  PutSecretBody,
  RevisionListResponse,
  RevisionSchema,
  SecretListResponse,
  SecretParams,
  SecretResponse,
} from './schemas.ts';
import type { ConfigService } from './service.ts';

const BASE = '/api/v0/config';
const tags = ['Configuration'];
/** Planning reads every kind's objects, and applying changes them: managers and owners only. */
const guards = [managerOrHigher];
/** 500 documents and more in one request. */
const bodyLimit = '20mb';

/** agentplane extension: platform as code (documents, plan, apply, revisions, secrets). */
export function configRoutes(service: ConfigService): RouteSpec[] {
  return [
    defineRoute({
      tags,
      guards,
      method: 'post',
      path: `${BASE}/plan`,
      operationId: 'planConfig',
      summary: 'What applying these documents would change, per object; changes nothing',
      body: PlanBody,
      bodyLimit,
      responses: { 200: { description: 'The plan', schema: PlanSchema } },
      errors: [400, 401, 403, 413, 500],
      handler: async ({ principal, body }) => ({ status: 200, body: await service.plan(principal, body) }),
    }),
    defineRoute({
      tags,
      guards,
      method: 'post',
      path: `${BASE}/apply`,
      operationId: 'applyConfig',
      summary: 'Validate the documents, then apply the plan in one transaction and record a revision (all or nothing)',
      body: PlanBody,
      bodyLimit,
      responses: { 200: { description: 'The plan applied and its revision', schema: ApplyResponse } },
      errors: [400, 401, 403, 409, 413, 500],
      handler: async ({ principal, body }) => ({ status: 200, body: await service.apply(principal, body) }),
    }),
    defineRoute({
      tags,
      guards,
      method: 'get',
      path: `${BASE}/revisions`,
      operationId: 'listConfigRevisions',
      summary: 'Applied revisions, newest first',
      query: PageQuerySchema,
      responses: { 200: { description: 'Revisions', schema: RevisionListResponse } },
      errors: [400, 401, 403, 500],
      handler: async ({ principal, query }) => ({ status: 200, body: await service.revisions(principal, query) }),
    }),
    defineRoute({
      tags,
      guards,
      method: 'get',
      path: `${BASE}/revisions/{revisionId}`,
      operationId: 'getConfigRevision',
      summary: 'One revision with its plan',
      params: z.object({ revisionId: z.string().min(1) }),
      responses: { 200: { description: 'The revision', schema: RevisionSchema } },
      errors: [401, 403, 404, 500],
      handler: async ({ principal, params }) => ({ status: 200, body: await service.revision(principal, params.revisionId) }),
    }),
    defineRoute({
      tags,
      guards,
      method: 'get',
      path: `${BASE}/export`,
      operationId: 'exportConfig',
      summary: "The organization's current configuration as documents (applying them back changes nothing)",
      responses: { 200: { description: 'Files of documents', schema: ExportResponse } },
      errors: [401, 403, 500],
      handler: async ({ principal }) => ({ status: 200, body: await service.export(principal) }),
    }),
    defineRoute({
      tags,
      auth: false,
      method: 'get',
      path: `${BASE}/schema.json`,
      operationId: 'getConfigSchema',
      summary: "JSON Schema of every kind's document, for editors (yaml-language-server)",
      responses: { 200: { description: 'JSON Schema', schema: z.record(z.string(), z.unknown()) } },
      errors: [500],
      handler: async () => ({ status: 200, body: documentJsonSchema() }),
    }),
    defineRoute({
      tags,
      guards,
      method: 'get',
      path: `${BASE}/secrets`,
      operationId: 'listConfigSecrets',
      summary: 'Secrets documents may name, without their values',
      responses: { 200: { description: 'Secrets', schema: SecretListResponse } },
      errors: [401, 403, 500],
      handler: async ({ principal }) => ({ status: 200, body: await service.secrets.list(principal) }),
    }),
    defineRoute({
      tags,
      guards,
      method: 'put',
      path: `${BASE}/secrets/{name}`,
      operationId: 'putConfigSecret',
      summary: 'Set a secret documents name (`tokenFrom: {secret: NAME}`); write-only',
      params: SecretParams,
      body: PutSecretBody,
      responses: { 200: { description: 'Replaced', schema: SecretResponse }, 201: { description: 'Created', schema: SecretResponse } },
      errors: [400, 401, 403, 500],
      handler: async ({ principal, params, body }) => {
        const { secret, created } = await service.secrets.put(principal, params.name, body.value);
        return { status: created ? 201 : 200, body: secret };
      },
    }),
  ];
}
