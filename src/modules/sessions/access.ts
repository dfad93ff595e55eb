import { roleAtLeast, type Principal } from '../../auth/principal.ts';
import type { Db } from '../../db/client.ts';
import type { Session } from '../../generated/prisma/client.ts';
import { BadRequest, Forbidden, NotFound } from '../../lib/errors.ts';
import { ownerOf } from '../computers/access.ts';

/**
 * A session the principal may act on: its own, or (for human managers and owners) one a service
 * account of the organization owns. Every other session, deleted ones included unless asked for,
 * answers 404 so that its existence does not leak.
 */
export async function reachableSession(
  db: Db,
  principal: Principal,
  sessionId: string,
  opts: { includeDeleted?: boolean; computerId?: string } = {},
): Promise<Session> {
  const session = await db.session.findFirst({
    where: { id: sessionId, organizationId: principal.organizationId, ...(opts.includeDeleted ? {} : { deletedAt: null }) },
  });
  const missing = new NotFound(`Session ${sessionId} not found`);
  if (!session) throw missing;
  const me = ownerOf(principal);
  const mine = session.ownerKind === me.kind && session.ownerId === me.id;
  const managed = session.ownerKind === 'service' && principal.kind === 'user' && roleAtLeast(principal.role, 'manager');
  if (!mine && !managed) throw missing;
  if (opts.computerId !== undefined && opts.computerId !== session.computerId) {
    throw new BadRequest(
      `Session ${sessionId} runs on computer ${session.computerId}, not ${opts.computerId}; omit computerId or pass the session's computer`,
      { metadata: { errors: [{ field: 'computerId', message: 'does not match the session computer' }] } },
    );
  }
  return session;
}

/**
 * A session whose approvals the principal may answer: its owner's, and a service account's
 * session for human managers and owners (as reachableSession). A plain member answering a service
 * account's session gets 403, as for its computers (members see the organization's service
 * accounts); another member's session and another organization's answer 404.
 */
export async function approvableSession(db: Db, principal: Principal, sessionId: string): Promise<Session> {
  const session = await db.session.findFirst({ where: { id: sessionId, organizationId: principal.organizationId, deletedAt: null } });
  const me = ownerOf(principal);
  if (session && session.ownerKind === 'service' && !(session.ownerKind === me.kind && session.ownerId === me.id)) {
    if (principal.kind !== 'user' || !roleAtLeast(principal.role, 'manager')) {
      throw new Forbidden("A service account's session has its approvals answered by the service account or by a manager or owner of the organization");
    }
  }
  return reachableSession(db, principal, sessionId);
}
