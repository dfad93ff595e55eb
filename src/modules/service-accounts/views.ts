import type { ApiKey, ServiceAccount } from '../../generated/prisma/client.ts';
import type { ApiKeyView, IssuedApiKeyView, ServiceAccountView } from './schemas.ts';

/** Stored rows -> the wire shapes of the wire reference (times in Unix ms, unset fields omitted). */

/** The columns the wire shape of an account is made from. */
export type ServiceAccountRow = Pick<ServiceAccount, 'id' | 'name' | 'description' | 'status' | 'createdBy' | 'teamIds' | 'createdAt' | 'updatedAt'>;

export function serviceAccountView(row: ServiceAccountRow): ServiceAccountView {
  return {
    id: row.id,
    name: row.name,
    ...(row.description !== null ? { description: row.description } : {}),
    status: row.status,
    createdBy: row.createdBy,
    teamIds: row.teamIds,
    createdAt: row.createdAt.getTime(),
    updatedAt: row.updatedAt.getTime(),
  };
}

export function apiKeyView(row: ApiKey): ApiKeyView {
  return {
    id: row.id,
    name: row.name,
    fingerprint: row.fingerprint,
    createdAt: row.createdAt.getTime(),
    ...(row.expiresAt ? { expiresAt: row.expiresAt.getTime() } : {}),
    isRevoked: row.revokedAt !== null,
    ...(row.revokedAt ? { revokedAt: row.revokedAt.getTime() } : {}),
  };
}

export function issuedApiKeyView(row: ApiKey & { value: string }): IssuedApiKeyView {
  return {
    id: row.id,
    value: row.value,
    fingerprint: row.fingerprint,
    name: row.name,
    ...(row.expiresAt ? { expiresAt: row.expiresAt.getTime() } : {}),
  };
}
