import { z } from 'zod';

/**
 * Plan features of an organization. A self-hosted organization has every feature unless its
 * `entitlements` document switches one off, e.g. `{"serviceAccounts": false}`.
 */
const EntitlementsSchema = z.object({
  serviceAccounts: z.boolean().default(true),
  computers: z.boolean().default(true),
  /** Live computers the organization may have at once; absent means no limit. */
  maxComputers: z.int().min(0).optional(),
});
export type Entitlements = z.infer<typeof EntitlementsSchema>;

export function entitlementsOf(org: { entitlements: unknown }): Entitlements {
  const parsed = EntitlementsSchema.safeParse(org.entitlements ?? {});
  return parsed.success ? parsed.data : EntitlementsSchema.parse({});
}
