import { issueApiKey } from '../../auth/issue-api-key.ts';
import type { Principal } from '../../auth/principal.ts';
import type { Db } from '../../db/client.ts';
import { BadRequest, Conflict } from '../../lib/errors.ts';
import { PUBLIC_API_SOURCE, recordAudit } from '../audit/record.ts';
import { publishKeysRevoked } from './key-events.ts';
import { accountNotFound, assertServiceAccountsPlan, futureExpiry, KEY_EVENT, keyNotFound, lockAccount, requireServiceAccountsPlan } from './access.ts';
import type { CreateApiKeyInput, RotateApiKeyInput } from './schemas.ts';
import type { ServiceAccountsDeps } from './service.ts';
import { apiKeyView, issuedApiKeyView } from './views.ts';

const MINUTE_MS = 60_000;

/** Keys that hold their name: not revoked and not expired. */
function liveKeyNamed(serviceAccountId: string, name: string, now: Date) {
  return {
    serviceAccountId,
    name,
    revokedAt: null,
    OR: [{ expiresAt: null }, { expiresAt: { gt: now } }],
  };
}

function nameInUse(name: string, holderId: string): Conflict {
  return new Conflict(
    `This service account already has an active API key named "${name}" (${holderId}); ` + 'choose another name, or rotate or revoke that key',
  );
}

function deletedAccount(serviceAccountId: string): Conflict {
  return new Conflict(`Service account ${serviceAccountId} is deleted; its keys can no longer be issued or rotated`);
}

export function apiKeyOperations({ db, clock }: ServiceAccountsDeps) {
  async function findKey(tx: Db, organizationId: string, serviceAccountId: string, keyId: string) {
    const key = await tx.apiKey.findFirst({ where: { id: keyId, serviceAccountId, organizationId } });
    if (!key) throw keyNotFound(serviceAccountId, keyId);
    return key;
  }

  return {
    /** All keys of the account, revoked and expired ones included, newest first. */
    async listKeys(actor: Principal, serviceAccountId: string) {
      const organizationId = actor.organizationId;
      const org = await db.organization.findUnique({
        where: { id: organizationId },
        select: {
          entitlements: true,
          serviceAccounts: {
            where: { id: serviceAccountId },
            select: { apiKeys: { orderBy: [{ createdAt: 'desc' }, { id: 'desc' }] } },
          },
        },
      });
      assertServiceAccountsPlan(org);
      const account = org.serviceAccounts[0];
      if (!account) throw accountNotFound(serviceAccountId);
      return account.apiKeys.map(apiKeyView);
    },

    async createKey(actor: Principal, serviceAccountId: string, input: CreateApiKeyInput) {
      const organizationId = actor.organizationId;
      const now = clock.now();
      const expiresAt = futureExpiry(input.expiresAt, now);
      return db.$transaction(async (tx) => {
        await requireServiceAccountsPlan(tx, organizationId);
        const account = await lockAccount(tx, organizationId, serviceAccountId);
        if (account.status === 'deleted') throw deletedAccount(serviceAccountId);
        const holder = await tx.apiKey.findFirst({ where: liveKeyNamed(serviceAccountId, input.name, now), select: { id: true } });
        if (holder) throw nameInUse(input.name, holder.id);
        const key = await issueApiKey(tx, { organizationId, owner: { serviceAccountId }, name: input.name, expiresAt, now });
        await recordAudit(tx, {
          organizationId,
          eventType: KEY_EVENT,
          source: PUBLIC_API_SOURCE,
          actor,
          target: { serviceAccountId, apiKeyId: key.id, name: key.name },
          before: null,
          after: apiKeyView(key),
          payload: { intent: 'created' },
          at: now,
        });
        return issuedApiKeyView(key);
      });
    },

    /**
     * Idempotent and immediate: a live key is revoked, a rotated key still inside its grace
     * window stops at once, an already dead key is left as it is.
     */
    async revokeKey(actor: Principal, serviceAccountId: string, keyId: string): Promise<void> {
      const organizationId = actor.organizationId;
      await db.$transaction(async (tx) => {
        const before = await findKey(tx, organizationId, serviceAccountId, keyId);
        const now = clock.now();
        const revoked = await tx.apiKey.updateMany({ where: { id: keyId, revokedAt: null }, data: { revokedAt: now } });
        const graceEnded =
          revoked.count === 0 ? await tx.apiKey.updateMany({ where: { id: keyId, validUntil: { gt: now } }, data: { validUntil: now } }) : { count: 0 };
        if (revoked.count === 0 && graceEnded.count === 0) return;
        await publishKeysRevoked(tx, [{ ...before, validUntil: now }], 'revoked');
        await recordAudit(tx, {
          organizationId,
          eventType: KEY_EVENT,
          source: PUBLIC_API_SOURCE,
          actor,
          target: { serviceAccountId, apiKeyId: keyId, name: before.name },
          before: apiKeyView(before),
          after: apiKeyView(await findKey(tx, organizationId, serviceAccountId, keyId)),
          payload: { intent: 'revoked', graceWindowEnded: graceEnded.count > 0 },
          at: now,
        });
      });
    },

    /**
     * One transaction: the old key is revoked (kept valid for the grace period, if any) and a
     * replacement with the same name is issued.
     */
    async rotateKey(actor: Principal, serviceAccountId: string, keyId: string, input: RotateApiKeyInput) {
      const organizationId = actor.organizationId;
      const now = clock.now();
      const expiresAt = futureExpiry(input.expiresAt, now);
      const graceMinutes = input.gracePeriodMinutes ?? 0;
      const validUntil = graceMinutes > 0 ? new Date(now.getTime() + graceMinutes * MINUTE_MS) : null;
      return db.$transaction(async (tx) => {
        await requireServiceAccountsPlan(tx, organizationId);
        const account = await lockAccount(tx, organizationId, serviceAccountId);
        const old = await findKey(tx, organizationId, serviceAccountId, keyId);
        if (account.status === 'deleted') throw deletedAccount(serviceAccountId);
        if (old.revokedAt) {
          throw new Conflict(
            `API key ${keyId} was already revoked at ${old.revokedAt.toISOString()} and cannot be rotated; ` + 'rotate its replacement, or create a new key',
          );
        }
        if (validUntil && old.expiresAt && old.expiresAt < validUntil) {
          throw new BadRequest(
            `API key ${keyId} expires at ${old.expiresAt.toISOString()}, before a ${graceMinutes}-minute grace window ` +
              `would end (${validUntil.toISOString()}); a grace period never extends a key's lifetime, ` +
              'so pass a smaller gracePeriodMinutes (0 revokes the key at once)',
            { metadata: { errors: [{ field: 'gracePeriodMinutes', message: 'outlasts the key' }] } },
          );
        }
        // An expired key no longer holds its name, so another live key may have taken it since.
        const holder = await tx.apiKey.findFirst({
          where: { ...liveKeyNamed(serviceAccountId, old.name, now), id: { not: keyId } },
          select: { id: true },
        });
        if (holder) throw nameInUse(old.name, holder.id);
        const revoked = await tx.apiKey.updateMany({ where: { id: keyId, revokedAt: null }, data: { revokedAt: now, validUntil } });
        if (revoked.count === 0) throw new Conflict(`API key ${keyId} was revoked while this request ran; it cannot be rotated`);
        await publishKeysRevoked(tx, [{ ...old, validUntil }], 'rotated');
        const replacement = await issueApiKey(tx, { organizationId, owner: { serviceAccountId }, name: old.name, expiresAt, now });
        await recordAudit(tx, {
          organizationId,
          eventType: KEY_EVENT,
          source: PUBLIC_API_SOURCE,
          actor,
          target: { serviceAccountId, apiKeyId: keyId, name: old.name },
          before: apiKeyView(old),
          after: { revoked: apiKeyView(await findKey(tx, organizationId, serviceAccountId, keyId)), replacement: apiKeyView(replacement) },
          payload: {
            intent: 'rotated',
            replacementKeyId: replacement.id,
            gracePeriodMinutes: graceMinutes,
            validUntil: validUntil?.getTime() ?? null,
          },
          at: now,
        });
        return issuedApiKeyView(replacement);
      });
    },
  };
}
