import { humanOnly, managerOrHigher } from '../../auth/guards.ts';
import { defineRoute, type RouteSpec } from '../../http/route.ts';
import { apiKeyRoutes } from './api-key-routes.ts';
import {
  CreateServiceAccountBody,
  DeletedServiceAccountResponse,
  ServiceAccountIdParams,
  ServiceAccountListResponse,
  ServiceAccountResponse,
  UpdateServiceAccountBody,
} from './schemas.ts';
import type { ServiceAccountsService } from './service.ts';

/** Spec 4.3: human managers and owners only; service-account credentials get 403. */
const SERVICE_ACCOUNT_GUARDS = [humanOnly, managerOrHigher];
const SERVICE_ACCOUNT_TAGS = ['Service Accounts'];

export function serviceAccountRoutes(service: ServiceAccountsService): RouteSpec[] {
  const common = { tags: SERVICE_ACCOUNT_TAGS, guards: SERVICE_ACCOUNT_GUARDS };
  return [
    defineRoute({
      ...common,
      method: 'get',
      path: '/api/v0/service-accounts',
      operationId: 'listServiceAccounts',
      summary: "List the organization's service accounts (deleted ones are left out)",
      responses: { 200: { description: 'Service accounts, newest first', schema: ServiceAccountListResponse } },
      errors: [401, 402, 403, 500],
      handler: async ({ principal, fence }) => ({ status: 200, body: await service.list(principal, fence) }),
    }),
    defineRoute({
      ...common,
      method: 'post',
      path: '/api/v0/service-accounts',
      operationId: 'createServiceAccount',
      summary: 'Create a service account',
      body: CreateServiceAccountBody,
      responses: { 201: { description: 'The new service account', schema: ServiceAccountResponse } },
      errors: [400, 401, 402, 403, 409, 500],
      handler: async ({ principal, body }) => ({
        status: 201,
        body: { serviceAccount: await service.create(principal, body) },
      }),
    }),
    defineRoute({
      ...common,
      method: 'get',
      path: '/api/v0/service-accounts/{serviceAccountId}',
      operationId: 'getServiceAccount',
      summary: 'Get a service account (a deleted one answers with status deleted)',
      params: ServiceAccountIdParams,
      responses: { 200: { description: 'The service account', schema: ServiceAccountResponse } },
      errors: [401, 402, 403, 404, 500],
      handler: async ({ principal, params }) => ({
        status: 200,
        body: { serviceAccount: await service.get(principal, params.serviceAccountId) },
      }),
    }),
    defineRoute({
      ...common,
      method: 'patch',
      path: '/api/v0/service-accounts/{serviceAccountId}',
      operationId: 'updateServiceAccount',
      summary: 'Change the description or status (active, inactive) of a service account; the name is immutable',
      params: ServiceAccountIdParams,
      body: UpdateServiceAccountBody,
      responses: { 200: { description: 'The updated service account', schema: ServiceAccountResponse } },
      errors: [400, 401, 402, 403, 404, 409, 500],
      handler: async ({ principal, params, body }) => ({
        status: 200,
        body: { serviceAccount: await service.update(principal, params.serviceAccountId, body) },
      }),
    }),
    defineRoute({
      ...common,
      method: 'delete',
      path: '/api/v0/service-accounts/{serviceAccountId}',
      operationId: 'deleteServiceAccount',
      summary: 'Delete a service account: its keys are revoked, the computers it owns deleted (managed ones torn down) and its stored git credentials purged',
      params: ServiceAccountIdParams,
      responses: { 200: { description: 'The account is deleted', schema: DeletedServiceAccountResponse } },
      errors: [401, 403, 404, 500],
      handler: async ({ principal, params }) => ({
        status: 200,
        body: await service.remove(principal, params.serviceAccountId),
      }),
    }),
    ...apiKeyRoutes(service, common),
  ];
}
