import type { Statement } from '../../db/reads.ts';
import type { ServiceAccountRow } from './views.ts';

/**
 * The organization's plan and its accounts that are not deleted, newest first, in one row (none
 * when the organization does not exist), with the auth epoch of the same snapshot (the list is
 * cached against it, src/db/fenced-cache.ts). The accounts come as one JSON array: decoding it is
 * a single JSON.parse, where ten rows of nine columns cost the PGlite driver about twice as much.
 */
export const LISTED_ACCOUNTS: Statement = {
  name: 'agentplane_listed_service_accounts',
  text: `SELECT o.entitlements, COALESCE((
  SELECT json_agg(json_build_object('id', sa.id, 'name', sa.name, 'description', sa.description,
    'status', sa.status, 'createdBy', sa.created_by, 'teamIds', sa.team_ids,
    'createdAt', sa.created_at, 'updatedAt', sa.updated_at) ORDER BY sa.created_at DESC, sa.id DESC)
  FROM service_accounts sa
  WHERE sa.organization_id = o.id AND sa.status <> 'deleted'), '[]') AS accounts,
  (SELECT e.epoch::text FROM auth_epoch e WHERE e.id = 1) AS epoch
FROM organizations o
WHERE o.id = $1`,
};

/** Timestamps arrive as JSON strings (ISO 8601 with offset). */
type ListedAccount = Omit<ServiceAccountRow, 'createdAt' | 'updatedAt'> & { createdAt: string; updatedAt: string };

export interface ListedAccountsRow {
  entitlements: unknown;
  accounts: ListedAccount[];
  epoch: string;
}

export function accountRowOf(listed: ListedAccount): ServiceAccountRow {
  return { ...listed, createdAt: new Date(listed.createdAt), updatedAt: new Date(listed.updatedAt) };
}
