import { roleAtLeast, type Principal } from '../../auth/principal.ts';
import type { PrismaClient } from '../../db/client.ts';
import { Forbidden, NotFound, Unauthorized } from '../../lib/errors.ts';

export interface RunAccessFields {
  id: string;
  organizationId: string;
  creatorKind: string;
  creatorId: string;
  privacy: string;
  publicToken: string | null;
}

export const creatorOf = (p: Principal) =>
  p.kind === 'user' ? { creatorKind: 'user', creatorId: p.userId } : { creatorKind: 'service_account', creatorId: p.serviceAccountId };

const isCreator = (p: Principal, run: RunAccessFields) => {
  const c = creatorOf(p);
  return c.creatorKind === run.creatorKind && c.creatorId === run.creatorId;
};

/** `private` runs: their creator, managers and owners; the others: every member of the organization. */
function canRead(p: Principal, run: RunAccessFields): boolean {
  if (p.organizationId !== run.organizationId) return false;
  return run.privacy !== 'private' || isCreator(p, run) || roleAtLeast(p.role, 'manager');
}

/** Deleting, changing privacy and attaching a video: the creator, managers and owners. */
function canManage(p: Principal, run: RunAccessFields): boolean {
  return p.organizationId === run.organizationId && (isCreator(p, run) || roleAtLeast(p.role, 'manager'));
}

export const missingCredentials = () =>
  new Unauthorized("Missing credentials: send Authorization: Bearer <API key or JWT>, or the publicToken of a public run's link");

export const runNotFound = (id: string) => new NotFound(`No wiki run ${id} that you can read; use a wikiRunId from GET /api/v0/wiki`);

/** The hosted platform's switch: an organization whose enterprise controls say `wikiCloudSync: false` has no wiki. */
export async function assertWikiEnabled(db: Pick<PrismaClient, 'organization'>, organizationId: string): Promise<void> {
  const org = await db.organization.findUnique({ where: { id: organizationId }, select: { enterpriseSettings: true } });
  const settings = org?.enterpriseSettings as { wikiCloudSync?: unknown } | null;
  if (settings && settings.wikiCloudSync === false) {
    throw new Forbidden(
      'Wiki runs are turned off for this organization (enterprise control wikiCloudSync is false); a manager can turn them on with PUT /api/v0/organization/enterprise-controls',
    );
  }
}

/** Who may read `run`: a principal by the rules above, or anyone holding the token of a public run's link. */
export function assertCanRead(run: RunAccessFields, caller: Principal | undefined, publicToken: string | undefined): void {
  if (caller) {
    if (canRead(caller, run) || (run.privacy === 'public' && publicToken !== undefined && publicToken === run.publicToken)) return;
    throw runNotFound(run.id);
  }
  if (publicToken === undefined) throw missingCredentials();
  if (run.privacy !== 'public' || publicToken !== run.publicToken) throw runNotFound(run.id);
}

export function assertCanManage(run: RunAccessFields, caller: Principal): void {
  if (canManage(caller, run)) return;
  if (canRead(caller, run)) throw new Forbidden("Only the run's creator, managers and owners can change or delete a wiki run");
  throw runNotFound(run.id);
}

export function assertCanCreate(caller: Principal): void {
  if (!roleAtLeast(caller.role, 'user')) throw new Forbidden('Guests can read wiki runs but not create them; ask a manager for the user role');
}
