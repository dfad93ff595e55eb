import type { Principal } from '../../auth/principal.ts';
import type { Db, Prisma } from '../../db/client.ts';
import { newId } from '../../lib/ids.ts';

type Json = Prisma.InputJsonValue;

/** The audit source of a change made through the public API (/api/v0). */
export const PUBLIC_API_SOURCE = 'public_api_v0';

export interface AuditEntry {
  organizationId: string;
  /** e.g. service_account_change, api_key_lifecycle_change, membership_change, user_limit_change */
  eventType: string;
  /** Where the change came from: public_api_v0, cli_bootstrap, ... */
  source: string;
  /** The principal who made the change; omitted for the system itself. */
  actor?: Principal;
  target: Record<string, Json | null>;
  before?: Json | null;
  after?: Json | null;
  payload?: Json | null;
  at: Date;
}

/**
 * Appends one audit record. Call it with the transaction that makes the change, so the change
 * and its record commit or roll back together.
 */
export async function recordAudit(tx: Db, entry: AuditEntry): Promise<void> {
  const actor = entry.actor;
  await tx.auditRecord.create({
    data: {
      id: newId('aud'),
      organizationId: entry.organizationId,
      eventType: entry.eventType,
      source: entry.source,
      actorKind: actor ? (actor.kind === 'user' ? 'human' : 'service') : 'system',
      actorId: actor ? (actor.kind === 'user' ? actor.userId : actor.serviceAccountId) : null,
      actorEmail: actor?.kind === 'user' ? actor.email : null,
      target: entry.target,
      before: entry.before ?? undefined,
      after: entry.after ?? undefined,
      payload: entry.payload ?? undefined,
      createdAt: entry.at,
    },
  });
}
