import type { Guard } from '../../auth/guards.ts';
import { defineRoute, type RouteSpec } from '../../http/route.ts';
import { ApiKeyIdParams, ApiKeyListResponse, CreateApiKeyBody, IssuedApiKeyResponse, RotateApiKeyBody, ServiceAccountIdParams } from './schemas.ts';
import type { ServiceAccountsService } from './service.ts';

/** A response that carries a key's one-time value must not be kept by any cache. */
const NO_STORE = { 'cache-control': 'no-store' };

export function apiKeyRoutes(service: ServiceAccountsService, common: { tags: string[]; guards: Guard[] }): RouteSpec[] {
  return [
    defineRoute({
      ...common,
      method: 'get',
      path: '/api/v0/service-accounts/{serviceAccountId}/api-keys',
      operationId: 'listServiceAccountApiKeys',
      summary: 'List the API keys of a service account, active and revoked',
      params: ServiceAccountIdParams,
      responses: { 200: { description: 'Keys, newest first; values are never shown', schema: ApiKeyListResponse } },
      errors: [401, 402, 403, 404, 500],
      handler: async ({ principal, params }) => ({
        status: 200,
        body: { apiKeys: await service.listKeys(principal, params.serviceAccountId) },
      }),
    }),
    defineRoute({
      ...common,
      method: 'post',
      path: '/api/v0/service-accounts/{serviceAccountId}/api-keys',
      operationId: 'createServiceAccountApiKey',
      summary: 'Create an API key for a service account; its value is shown only in this response',
      params: ServiceAccountIdParams,
      body: CreateApiKeyBody,
      responses: { 201: { description: 'The new key with its one-time value', schema: IssuedApiKeyResponse } },
      errors: [400, 401, 402, 403, 404, 409, 500],
      handler: async ({ principal, params, body }) => ({
        status: 201,
        headers: NO_STORE,
        body: { apiKey: await service.createKey(principal, params.serviceAccountId, body) },
      }),
    }),
    defineRoute({
      ...common,
      method: 'post',
      path: '/api/v0/service-accounts/{serviceAccountId}/api-keys/{keyId}/revoke',
      operationId: 'revokeServiceAccountApiKey',
      summary: 'Revoke an API key at once (idempotent)',
      params: ApiKeyIdParams,
      responses: { 204: { description: 'The key no longer authenticates' } },
      errors: [401, 403, 404, 500],
      handler: async ({ principal, params }) => {
        await service.revokeKey(principal, params.serviceAccountId, params.keyId);
        return { status: 204 };
      },
    }),
    defineRoute({
      ...common,
      method: 'post',
      path: '/api/v0/service-accounts/{serviceAccountId}/api-keys/{keyId}/rotate',
      operationId: 'rotateServiceAccountApiKey',
      summary: 'Atomically revoke an API key and issue a replacement with the same name',
      params: ApiKeyIdParams,
      body: RotateApiKeyBody,
      responses: { 200: { description: 'The replacement key with its one-time value', schema: IssuedApiKeyResponse } },
      errors: [400, 401, 402, 403, 404, 409, 500],
      handler: async ({ principal, params, body }) => ({
        status: 200,
        headers: NO_STORE,
        body: { apiKey: await service.rotateKey(principal, params.serviceAccountId, params.keyId, body) },
      }),
    }),
  ];
}
