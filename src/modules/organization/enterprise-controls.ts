import { isDeepStrictEqual } from 'node:util';
import { z } from 'zod';
import type { Principal } from '../../auth/principal.ts';
import type { Prisma } from '../../db/client.ts';
import { decodeOpaqueCursor, encodeOpaqueCursor, type PageQuery, type Pagination } from '../../http/pagination.ts';
import { AppError, BadRequest, Forbidden } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import { PUBLIC_API_SOURCE, recordAudit } from '../audit/record.ts';
import { redactCustomModelKeys, sealCustomModelKeys, sealLegacyCustomModelKeys } from './custom-model-keys.ts';
import { lockOrganization } from './organization-lock.ts';
import type { OrganizationDeps } from './service.ts';
import { wireUserId } from './user-id.ts';

type Settings = Record<string, unknown>;

function asSettings(value: Prisma.JsonValue): Settings {
  return value && typeof value === 'object' && !Array.isArray(value) ? (value as Settings) : {};
}

/** Custom models are called from the control plane's network, so their base URLs pass the egress guard first. */
async function screenCustomModelUrls(deps: OrganizationDeps, settings: Settings): Promise<void> {
  const list = Array.isArray(settings.customModels) ? (settings.customModels as unknown[]) : [];
  for (const [i, entry] of list.entries()) {
    const baseUrl = entry && typeof entry === 'object' ? (entry as { baseUrl?: unknown }).baseUrl : undefined;
    if (typeof baseUrl !== 'string') continue;
    try {
      await deps.egress.screen(baseUrl);
    } catch (err) {
      if (err instanceof AppError) throw new BadRequest(`settings.customModels[${i}].baseUrl: ${err.message}`, { metadata: err.metadata });
      throw err;
    }
  }
}

export async function getEnterpriseControls(deps: OrganizationDeps, actor: Principal) {
  const org = await deps.db.organization.findUniqueOrThrow({ where: { id: actor.organizationId } });
  return { revision: org.enterpriseRevision, settings: redactCustomModelKeys(asSettings(org.enterpriseSettings)) };
}

/**
 * Replaces the settings document. Each real change gets the next revision, under the
 * organization's row lock, and a history entry naming the person who made it; sending the
 * current document again changes nothing, so retries do not fill the history.
 */
export async function setEnterpriseControls(deps: OrganizationDeps, actor: Principal, settings: Settings) {
  if (actor.kind !== 'user') {
    throw new Forbidden('Enterprise controls record who changed them; authenticate as a human user');
  }
  await screenCustomModelUrls(deps, settings);
  return deps.db.$transaction(async (tx) => {
    const now = deps.clock.now();
    const org = await lockOrganization(tx, actor.organizationId);
    const stored = asSettings(org.enterpriseSettings);
    const current = sealLegacyCustomModelKeys(stored, deps.secrets);
    const next = sealCustomModelKeys(settings, current, deps.secrets);
    if (isDeepStrictEqual(current, next)) {
      // Keys stored before sealing are sealed now, without a revision: the document has not changed.
      if (current !== stored) {
        await tx.organization.update({ where: { id: org.id }, data: { enterpriseSettings: current as Prisma.InputJsonObject } });
      }
      return { revision: org.enterpriseRevision, settings: redactCustomModelKeys(current) };
    }
    const revision = org.enterpriseRevision + 1;
    const user = await tx.user.findUniqueOrThrow({ where: { id: actor.userId } });
    const name = [user.firstName, user.lastName].filter(Boolean).join(' ') || null;
    const shown = redactCustomModelKeys(next) as Prisma.InputJsonObject;
    await tx.organization.update({
      where: { id: org.id },
      data: { enterpriseSettings: next as Prisma.InputJsonObject, enterpriseRevision: revision, updatedAt: now },
    });
    await tx.enterpriseControlChange.create({
      data: {
        id: newId('ecc'),
        organizationId: org.id,
        revision,
        settings: shown,
        userId: user.id,
        userEmail: user.email,
        userName: name,
        createdAt: now,
      },
    });
    await recordAudit(tx, {
      organizationId: org.id,
      eventType: 'managed_settings_change',
      source: PUBLIC_API_SOURCE,
      actor,
      target: { organizationId: org.id },
      before: { revision: org.enterpriseRevision, settings: redactCustomModelKeys(current) as Prisma.InputJsonObject },
      after: { revision, settings: shown },
      payload: { updatedKeys: changedKeys(current, next), revision },
      at: now,
    });
    return { revision, settings: shown };
  });
}

/** Top-level keys added, removed or changed. */
/**
 * Seals the custom-model keys that organizations' settings still hold in plain text (written
 * before keys were sealed), at every start of the server; once done, it finds nothing. The
 * document means the same, so no revision is recorded.
 */
export async function sealStoredCustomModelKeys(deps: Pick<OrganizationDeps, 'db' | 'secrets'>): Promise<void> {
  const candidates = await deps.db.$queryRaw<{ id: string }[]>`
    SELECT id FROM organizations WHERE enterprise_settings::text LIKE '%"apiKey"%'`;
  for (const { id } of candidates) {
    await deps.db.$transaction(async (tx) => {
      const stored = asSettings((await lockOrganization(tx, id)).enterpriseSettings);
      const sealed = sealLegacyCustomModelKeys(stored, deps.secrets);
      if (sealed !== stored) await tx.organization.update({ where: { id }, data: { enterpriseSettings: sealed as Prisma.InputJsonObject } });
    });
  }
}

function changedKeys(before: Settings, after: Settings): string[] {
  const keys = new Set([...Object.keys(before), ...Object.keys(after)]);
  return [...keys].filter((k) => !(k in before && k in after && isDeepStrictEqual(before[k], after[k]))).sort();
}

export async function listEnterpriseControlChanges(deps: OrganizationDeps, actor: Principal, page: PageQuery) {
  const before = page.cursor ? decodeOpaqueCursor(page.cursor, RevisionCursorSchema).r : undefined;
  const rows = await deps.db.enterpriseControlChange.findMany({
    where: { organizationId: actor.organizationId, ...(before ? { revision: { lt: before } } : {}) },
    orderBy: { revision: 'desc' },
    take: page.limit + 1,
  });
  const items = rows.slice(0, page.limit);
  const hasMore = rows.length > page.limit;
  const pagination: Pagination = {
    hasMore,
    nextCursor: hasMore ? encodeOpaqueCursor({ r: items[items.length - 1]!.revision }) : null,
  };
  // Each change names its user by the id the users list shows now; a user deleted since keeps the stored id.
  const users = await deps.db.user.findMany({
    where: { id: { in: [...new Set(items.map((c) => c.userId))] } },
    select: { id: true, idpUserId: true },
  });
  const wireIds = new Map(users.map((u) => [u.id, wireUserId(u)]));
  return {
    changes: items.map((c) => ({
      revision: c.revision,
      settings: redactCustomModelKeys(asSettings(c.settings)),
      user: { id: wireIds.get(c.userId) ?? c.userId, email: c.userEmail, name: c.userName ?? c.userEmail },
      updatedAt: c.createdAt.toISOString(),
    })),
    pagination,
  };
}

// History is ordered by revision, which is unique per organization, so the cursor is the last
// revision seen rather than the (createdAt, id) position the other lists use.
const RevisionCursorSchema = z.object({ r: z.number().int().min(1) });
