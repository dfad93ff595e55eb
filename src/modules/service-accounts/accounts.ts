import type { Principal } from '../../auth/principal.ts';
import type { AuthEpoch } from '../../db/auth-epoch.ts';
import type { Db } from '../../db/client.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import { createFencedCache, rowWithEpoch } from '../../db/fenced-cache.ts';
import type { Computer, ServiceAccount } from '../../generated/prisma/client.ts';
import { checkedJson } from '../../http/serialized-json.ts';
import { Conflict } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import { PUBLIC_API_SOURCE, recordAudit, type AuditEntry } from '../audit/record.ts';
import { publishKeysRevoked } from './key-events.ts';
import { retireServiceAccountComputers } from '../computers/retire.ts';
import { accountNotFound, ACCOUNT_EVENT, actorId, assertServiceAccountsPlan, requireServiceAccountsPlan } from './access.ts';
import { purgeMachineGitCredentials } from './machine-credentials.ts';
import { accountRowOf, LISTED_ACCOUNTS, type ListedAccountsRow } from './reads.ts';
import { ServiceAccountListResponse, type CreateServiceAccountInput, type UpdateServiceAccountInput } from './schemas.ts';
import type { ServiceAccountsDeps } from './service.ts';
import { serviceAccountView } from './views.ts';

function deletedConflict(id: string): Conflict {
  return new Conflict(`Service account ${id} is deleted and cannot be changed; create a new service account instead`);
}

function nameTaken(name: string, holder?: { id: string; status: string }): Conflict {
  const by = !holder ? 'another service account' : holder.status === 'deleted' ? `the deleted service account ${holder.id}` : `service account ${holder.id}`;
  return new Conflict(`The name "${name}" is already used by ${by} in this organization; names are never reused, choose another name`);
}

/** Records a change to an account, made by `actor` through the public API. */
function recordAccountChange(
  db: Db,
  actor: Principal,
  account: Pick<ServiceAccount, 'id' | 'name'>,
  change: Pick<AuditEntry, 'before' | 'after' | 'payload' | 'at'>,
): Promise<void> {
  return recordAudit(db, {
    organizationId: actor.organizationId,
    eventType: ACCOUNT_EVENT,
    source: PUBLIC_API_SOURCE,
    actor,
    target: { serviceAccountId: account.id, name: account.name },
    ...change,
  });
}

/** Organizations whose lists are kept at most (src/db/fenced-cache.ts). */
const MAX_CACHED_LISTS = 1_000;

export function accountOperations({ db, clock, reads, computers, machines, log }: ServiceAccountsDeps) {
  // Each organization's plan and list answer, kept while the auth epoch shows no change to either:
  // a new account, a change to a listed column or to the plan advances it (by trigger).
  const lists = createFencedCache(
    rowWithEpoch(reads, LISTED_ACCOUNTS, (row: ListedAccountsRow) => ({
      entitlements: row.entitlements,
      answer: checkedJson(ServiceAccountListResponse, {
        serviceAccounts: row.accounts.map((listed) => serviceAccountView(accountRowOf(listed))),
      }),
    })),
    MAX_CACHED_LISTS,
  );

  async function find(tx: Db, organizationId: string, id: string): Promise<ServiceAccount> {
    const row = await tx.serviceAccount.findFirst({ where: { id, organizationId } });
    if (!row) throw accountNotFound(id);
    return row;
  }

  return {
    // Reads fetch the plan and the rows in one round trip: on a busy server every round trip counts.

    /** The `{serviceAccounts}` answer: accounts that are not deleted, newest first, as of the request's fence. */
    async list(actor: Principal, fence: AuthEpoch) {
      const org = (await lists.get(actor.organizationId, fence)) ?? null;
      assertServiceAccountsPlan(org);
      return org.answer;
    },

    /** One account, deleted ones included (status `deleted`), so a client can confirm a deletion. */
    async get(actor: Principal, id: string) {
      const org = await db.organization.findUnique({
        where: { id: actor.organizationId },
        select: { entitlements: true, serviceAccounts: { where: { id } } },
      });
      assertServiceAccountsPlan(org);
      const row = org.serviceAccounts[0];
      if (!row) throw accountNotFound(id);
      return serviceAccountView(row);
    },

    async create(actor: Principal, input: CreateServiceAccountInput) {
      const organizationId = actor.organizationId;
      try {
        return await db.$transaction(async (tx) => {
          await requireServiceAccountsPlan(tx, organizationId);
          const holder = await tx.serviceAccount.findUnique({
            where: { organizationId_name: { organizationId, name: input.name } },
            select: { id: true, status: true },
          });
          if (holder) throw nameTaken(input.name, holder);
          const now = clock.now();
          const row = await tx.serviceAccount.create({
            data: {
              id: newId('sa'),
              organizationId,
              name: input.name,
              description: input.description ?? null,
              status: input.status,
              createdBy: actorId(actor),
              createdAt: now,
              updatedAt: now,
            },
          });
          const after = serviceAccountView(row);
          await recordAccountChange(tx, actor, row, {
            before: null,
            after,
            payload: { intent: 'created', toStatus: row.status },
            at: now,
          });
          return after;
        });
      } catch (err) {
        // Two creates of one name at once: the unique index stops the second.
        if (isUniqueViolation(err)) throw nameTaken(input.name);
        throw err;
      }
    },

    /** Description and status (active <-> inactive); the status changes by compare-and-set. */
    async update(actor: Principal, id: string, input: UpdateServiceAccountInput) {
      const organizationId = actor.organizationId;
      return db.$transaction(async (tx) => {
        await requireServiceAccountsPlan(tx, organizationId);
        const current = await find(tx, organizationId, id);
        if (current.status === 'deleted') throw deletedConflict(id);
        const status = input.status ?? current.status;
        const description = input.description ?? current.description;
        if (status === current.status && description === current.description) return serviceAccountView(current);
        const now = clock.now();
        const changed = await tx.serviceAccount.updateMany({
          where: { id, organizationId, status: current.status },
          data: { status, description, updatedAt: now },
        });
        if (changed.count === 0) {
          const latest = await find(tx, organizationId, id);
          if (latest.status === 'deleted') throw deletedConflict(id);
          throw new Conflict(`Service account ${id} changed to ${latest.status} while this request ran; read it again and retry`);
        }
        const before = serviceAccountView(current);
        const after = serviceAccountView(await find(tx, organizationId, id));
        await recordAccountChange(tx, actor, current, {
          before,
          after,
          payload:
            status !== current.status ? { intent: 'status_changed', fromStatus: current.status, toStatus: status } : { intent: 'updated', toStatus: status },
          at: now,
        });
        return after;
      });
    },

    /**
     * Soft delete: status `deleted`, every key revoked (rotation grace windows end too), the
     * computers it owns deleted as the computers API deletes one (managed ones torn down), and
     * stored git credentials purged, in one transaction. Then, best effort, the git credentials
     * written onto its registered machines are removed, with the outcome in a second audit
     * record. Deleting a deleted account changes nothing.
     */
    async remove(actor: Principal, id: string) {
      const organizationId = actor.organizationId;
      const deleted = await db.$transaction(async (tx): Promise<{ account: ServiceAccount; retired: Computer[] } | undefined> => {
        const current = await find(tx, organizationId, id);
        if (current.status === 'deleted') return undefined;
        const now = clock.now();
        const changed = await tx.serviceAccount.updateMany({
          where: { id, organizationId, status: { in: ['active', 'inactive'] } },
          data: { status: 'deleted', updatedAt: now },
        });
        // 0 rows: another request deleted it first, which is the outcome this one asked for.
        if (changed.count === 0) return undefined;
        const keysRevoked = await tx.apiKey.updateManyAndReturn({
          where: { serviceAccountId: id, revokedAt: null },
          data: { revokedAt: now },
        });
        await publishKeysRevoked(tx, keysRevoked, 'service_account_deleted');
        const graceWindowsEnded = await tx.apiKey.updateMany({
          where: { serviceAccountId: id, validUntil: { gt: now } },
          data: { validUntil: now },
        });
        const retired = await retireServiceAccountComputers(tx, computers, actor, id, now);
        const gitCredentials = await tx.gitCredential.deleteMany({ where: { serviceAccountId: id } });
        await recordAccountChange(tx, actor, current, {
          before: serviceAccountView(current),
          after: serviceAccountView(await find(tx, organizationId, id)),
          payload: {
            intent: 'deleted',
            fromStatus: current.status,
            toStatus: 'deleted',
            keysRevoked: keysRevoked.length,
            graceWindowsEnded: graceWindowsEnded.count,
            computersDeleted: retired.map((c) => c.id),
            gitCredentialsPurged: gitCredentials.count,
          },
          at: now,
        });
        return { account: current, retired };
      });
      if (deleted) {
        // The account is deleted whatever happens now: what follows cannot fail the request.
        try {
          const machineCredentials = await purgeMachineGitCredentials({ db, ...machines }, deleted.retired);
          if (machineCredentials.length > 0) {
            await recordAccountChange(db, actor, deleted.account, {
              payload: { intent: 'machine_git_credentials_purged', machines: machineCredentials },
              at: clock.now(),
            });
          }
        } catch (err) {
          log.error({ err, serviceAccountId: id }, "cannot record the purge of a deleted service account's machine git credentials");
        } finally {
          for (const c of deleted.retired) if (c.connectionType === 'agent') machines.gateway?.disconnect(c.id);
        }
      }
      return { id, deleted: true as const };
    },
  };
}
