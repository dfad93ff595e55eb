import type { Db } from '../../db/client.ts';
import type { ApiKey } from '../../generated/prisma/client.ts';
import { publish } from '../events/publish.ts';

/** Why a key stopped: a revoke, a rotation (it may still work until `validUntil`), or its owner left. */
export type RevokeReason = 'revoked' | 'rotated' | 'service_account_deleted' | 'member_removed';

/** `apikey.revoked` for each key, in the transaction that revoked it. The key's value never appears. */
export function publishKeysRevoked(
  db: Db,
  keys: Pick<ApiKey, 'id' | 'organizationId' | 'name' | 'serviceAccountId' | 'userId' | 'validUntil'>[],
  reason: RevokeReason,
) {
  return publish(
    db,
    keys.map((k) => ({
      type: 'apikey.revoked' as const,
      organizationId: k.organizationId,
      data: {
        apiKeyId: k.id,
        name: k.name,
        reason,
        ...(k.serviceAccountId ? { serviceAccountId: k.serviceAccountId } : {}),
        ...(k.userId ? { userId: k.userId } : {}),
        ...(reason === 'rotated' && k.validUntil ? { validUntil: k.validUntil.toISOString() } : {}),
      },
    })),
  );
}
