import { managerOrHigher } from '../../auth/guards.ts';
import { defineRoute } from '../../http/route.ts';
import {
  ActivityQuerySchema,
  ActivityResponseSchema,
  ProductivityQuerySchema,
  ProductivityResponseSchema,
  TokensQuerySchema,
  TokensResponseSchema,
  ToolsQuerySchema,
  ToolsResponseSchema,
  UsersQuerySchema,
  UsersResponseSchema,
} from './schemas.ts';
import type { AnalyticsService } from './service.ts';

const BASE = '/api/v1/analytics';
const TAGS = ['Analytics'];
const ERRORS = [400, 401, 403, 500];

export function analyticsRoutes(service: AnalyticsService) {
  return [
    defineRoute({
      method: 'get',
      path: `${BASE}/tokens`,
      operationId: 'getAnalyticsTokenUsage',
      summary: 'Daily token usage and standard credits, by model and user',
      tags: TAGS,
      guards: [managerOrHigher],
      query: TokensQuerySchema,
      responses: { 200: { description: 'One row per day, or per model and day with group_by=model', schema: TokensResponseSchema } },
      errors: ERRORS,
      handler: async ({ principal, query }) => ({ status: 200, body: await service.tokens(principal.organizationId, query) }),
    }),
    defineRoute({
      method: 'get',
      path: `${BASE}/tools`,
      operationId: 'getAnalyticsToolUsage',
      summary: 'Daily tool invocations and autonomy metrics',
      tags: TAGS,
      guards: [managerOrHigher],
      query: ToolsQuerySchema,
      responses: { 200: { description: 'One row per day, or per tool and day with group_by=tool_name', schema: ToolsResponseSchema } },
      errors: ERRORS,
      handler: async ({ principal, query }) => ({ status: 200, body: await service.tools(principal.organizationId, query) }),
    }),
    defineRoute({
      method: 'get',
      path: `${BASE}/activity`,
      operationId: 'getAnalyticsActivity',
      summary: 'Daily, weekly and monthly active users, sessions and messages',
      tags: TAGS,
      guards: [managerOrHigher],
      query: ActivityQuerySchema,
      responses: { 200: { description: 'One row per day, or per client and day with group_by=client', schema: ActivityResponseSchema } },
      errors: ERRORS,
      handler: async ({ principal, query }) => ({ status: 200, body: await service.activity(principal.organizationId, query) }),
    }),
    defineRoute({
      method: 'get',
      path: `${BASE}/productivity`,
      operationId: 'getAnalyticsProductivity',
      summary: 'Daily files created and edited, commits and pull requests',
      tags: TAGS,
      guards: [managerOrHigher],
      query: ProductivityQuerySchema,
      responses: { 200: { description: 'One row per day', schema: ProductivityResponseSchema } },
      errors: ERRORS,
      handler: async ({ principal, query }) => ({ status: 200, body: await service.productivity(principal.organizationId, query) }),
    }),
    defineRoute({
      method: 'get',
      path: `${BASE}/users`,
      operationId: 'listAnalyticsUsers',
      summary: 'Per-user daily metrics, a page of users at a time',
      tags: TAGS,
      guards: [managerOrHigher],
      query: UsersQuerySchema,
      responses: { 200: { description: 'One row per user and active day, users in id order', schema: UsersResponseSchema } },
      errors: ERRORS,
      handler: async ({ principal, query }) => ({ status: 200, body: await service.users(principal.organizationId, query) }),
    }),
  ];
}
