import type { Principal } from '../../auth/principal.ts';
import type { Db, Prisma } from '../../db/client.ts';
import { PUBLIC_API_SOURCE, recordAudit } from '../audit/record.ts';

/** A `session_change` audit record of a change made through the public API (delete, restore, an approval decision). */
export function recordSessionChange(tx: Db, principal: Principal, sessionId: string, payload: Prisma.InputJsonObject, at: Date): Promise<void> {
  return recordAudit(tx, {
    organizationId: principal.organizationId,
    eventType: 'session_change',
    source: PUBLIC_API_SOURCE,
    actor: principal,
    target: { sessionId },
    payload,
    at,
  });
}
