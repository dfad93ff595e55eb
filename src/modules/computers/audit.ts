import type { Principal } from '../../auth/principal.ts';
import type { Db } from '../../db/client.ts';
import { PUBLIC_API_SOURCE, recordAudit, type AuditEntry } from '../audit/record.ts';

/** A `computer_change` audit record of the public API: created, updated, update_started, deleted. */
export function auditComputerChange(
  tx: Db,
  change: { organizationId: string; actor: Principal; computerId: string; action: string; at: Date } & Pick<AuditEntry, 'before' | 'after'>,
): Promise<void> {
  return recordAudit(tx, {
    organizationId: change.organizationId,
    eventType: 'computer_change',
    source: PUBLIC_API_SOURCE,
    actor: change.actor,
    target: { computerId: change.computerId },
    before: change.before,
    after: change.after,
    payload: { action: change.action },
    at: change.at,
  });
}
