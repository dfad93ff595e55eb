import { expect } from 'vitest';
import {
  ActivityResponseSchema,
  ProductivityResponseSchema,
  TokensResponseSchema,
  ToolsResponseSchema,
  UsersResponseSchema,
} from '../../src/modules/analytics/schemas.ts';

/** Each analytics endpoint's response schema, the one its OpenAPI document shows. */
const SCHEMAS = {
  tokens: TokensResponseSchema,
  tools: ToolsResponseSchema,
  activity: ActivityResponseSchema,
  productivity: ProductivityResponseSchema,
  users: UsersResponseSchema,
};

/**
 * Every variant of every analytics endpoint: its answers are JSON text assembled from what the
 * roll-up stored, not checked by the route, so tests check them against the schema instead.
 */
export const ANALYTICS_VARIANTS: readonly [endpoint: keyof typeof SCHEMAS, query: string][] = [
  ['tokens', ''],
  ['tokens', '&group_by=model'],
  ['tools', ''],
  ['tools', '&group_by=tool_name'],
  ['activity', ''],
  ['activity', '&group_by=client'],
  ['productivity', ''],
  ['users', ''],
  ['users', '&limit=1'],
  ['users', '&limit=100'],
];

/** Fails, naming each issue, unless `body` is exactly what `endpoint`'s schema accepts. */
export function expectAnalyticsShape(endpoint: keyof typeof SCHEMAS, body: unknown, label: string): void {
  expect(SCHEMAS[endpoint].safeParse(body).error?.issues, label).toBeUndefined();
}
