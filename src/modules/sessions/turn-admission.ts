import type { Db } from '../../db/client.ts';

/** Running turns at once across every replica (AGENTPLANE_TURNS_PER_ORGANIZATION, AGENTPLANE_TURNS_PER_OWNER). */
export interface TurnLimits {
  perOrganization: number;
  perOwner: number;
}

export const DEFAULT_TURN_LIMITS: TurnLimits = { perOrganization: 100, perOwner: 20 };

/** SQLSTATE of the commit the admission trigger refuses (migration 20261128000000_turn_admission_at_commit). */
const NOT_ADMITTED = 'AP429';

/**
 * Makes the commit of `tx`, which marks a session running, count that turn against its
 * organization's and owner's running-turn limits, this turn included: the commit takes the
 * organization's lock, counts and commits, or fails (turnNotAdmitted) and rolls everything back.
 * The lock is held inside the commit only, not across round trips of the client's, so turns
 * starting at once on several replicas count one after the other quickly. Subagent sessions run
 * inside their parent's turn and are not counted.
 */
export async function admitTurnAtCommit(tx: Db, limits: TurnLimits): Promise<void> {
  const params: string[] = [];
  await tx.$queryRawUnsafe(
    admitTurnAtCommitSql(limits, (value) => `$${params.push(value)}::text`),
    ...params,
  );
}

/** The transaction-local setting the admission trigger reads: "per organization,per owner". */
const setting = (limits: TurnLimits) => `${limits.perOrganization},${limits.perOwner}`;

/**
 * The SQL that names `limits` for the commit: admitTurnAtCommit's statement, or a part of another
 * statement's WITH (referenced there: PostgreSQL skips a WITH query nothing reads). `param` gives
 * the placeholder of a parameter of the statement.
 */
export function admitTurnAtCommitSql(limits: TurnLimits, param: (value: string) => string): string {
  return `SELECT set_config('agentplane.turn_limits', ${param(setting(limits))}, true)`;
}

/** Whether `err` is the commit admitTurnAtCommit's trigger refused: the turn may not start yet. */
export function turnNotAdmitted(err: unknown): boolean {
  for (let e = err; typeof e === 'object' && e !== null; e = (e as { cause?: unknown }).cause) {
    if ((e as { originalCode?: unknown }).originalCode === NOT_ADMITTED) return true;
  }
  return false;
}

/**
 * The sessions of `organizationId` waiting for a turn slot that may start now, oldest queued
 * message first: at most the organization's free slots, none of an owner at its limit. Their turn
 * jobs are sent again when a turn of the organization ends (the reaper re-sends the rest).
 */
export async function admissibleWaiting(db: Db, organizationId: string, limits: TurnLimits): Promise<string[]> {
  const rows = await db.$queryRaw<{ id: string }[]>`
    WITH running AS (
      SELECT owner_kind, owner_id, count(*) AS n FROM sessions
      WHERE organization_id = ${organizationId} AND status = 'running' AND deleted_at IS NULL AND parent_session_id IS NULL
      GROUP BY owner_kind, owner_id
    ), waiting AS (
      SELECT s.id, s.owner_kind, s.owner_id, min(m.created_at) AS since
      FROM sessions s JOIN session_messages m ON m.session_id = s.id AND m.queue_status = 'queued'
      WHERE s.organization_id = ${organizationId} AND s.status = 'pending' AND s.turn_paused_at IS NULL
        AND s.deleted_at IS NULL AND s.parent_session_id IS NULL
      GROUP BY s.id
    )
    SELECT w.id FROM waiting w LEFT JOIN running r ON r.owner_kind = w.owner_kind AND r.owner_id = w.owner_id
    WHERE coalesce(r.n, 0) < ${limits.perOwner}
    ORDER BY w.since, w.id
    LIMIT greatest(0, ${limits.perOrganization} - (SELECT coalesce(sum(n), 0) FROM running))::int`;
  return rows.map((r) => r.id);
}

/** Running turns and sessions waiting for one in an organization, in all and per owner: what managers see. */
export async function turnQueue(db: Db, organizationId: string) {
  const rows = await db.$queryRaw<{ owner_kind: string; owner_id: string; running: bigint; waiting: bigint }[]>`
    SELECT owner_kind, owner_id,
      count(*) FILTER (WHERE status = 'running') AS running,
      count(*) FILTER (WHERE status = 'pending' AND turn_paused_at IS NULL) AS waiting
    FROM sessions
    WHERE organization_id = ${organizationId} AND status IN ('running', 'pending') AND deleted_at IS NULL AND parent_session_id IS NULL
    GROUP BY owner_kind, owner_id
    ORDER BY owner_kind, owner_id`;
  const owners = rows.map((r) => ({ ownerKind: r.owner_kind, ownerId: r.owner_id, running: Number(r.running), pending: Number(r.waiting) }));
  return {
    running: owners.reduce((n, o) => n + o.running, 0),
    pending: owners.reduce((n, o) => n + o.pending, 0),
    owners,
  };
}
