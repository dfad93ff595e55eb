import { issueApiKey } from '../../auth/issue-api-key.ts';
import type { Db, PrismaClient } from '../../db/client.ts';
import type { Clock } from '../../lib/clock.ts';
import { newId } from '../../lib/ids.ts';
import { recordAudit } from '../audit/record.ts';

export interface BootstrapResult {
  organizationId: string;
  userId: string;
  /** The new personal API key, shown once; null when one was issued before and none was asked for. */
  apiKey: string | null;
  created: boolean;
}

const BOOTSTRAP_KEY_NAME = 'bootstrap';

/**
 * Idempotent: ensures the organization exists with an active owner of that email, and issues
 * the owner a personal API key the first time (or again when `newKey` is set).
 */
export async function bootstrapOrganization(
  prisma: PrismaClient,
  input: { org: string; email: string; newKey?: boolean },
  clock: Clock,
): Promise<BootstrapResult> {
  const email = input.email.toLowerCase();
  return prisma.$transaction(async (tx) => {
    // Replicas bootstrapping one empty database at once take turns; each later one finds what the
    // first made. The lock ends with the transaction.
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext('agentplane:bootstrap'))`;
    return bootstrapIn(tx, input, email, clock);
  });
}

async function bootstrapIn(tx: Db, input: { org: string; newKey?: boolean }, email: string, clock: Clock): Promise<BootstrapResult> {
  const now = clock.now();
  let created = false;
  let org = await tx.organization.findUnique({ where: { name: input.org } });
  if (!org) {
    org = await tx.organization.create({ data: { id: newId('org'), name: input.org, createdAt: now } });
    created = true;
  }
  let user = await tx.user.findUnique({ where: { email } });
  if (!user) user = await tx.user.create({ data: { id: newId('usr'), email, createdAt: now } });
  await tx.membership.upsert({
    where: { organizationId_userId: { organizationId: org.id, userId: user.id } },
    create: { id: newId('mem'), organizationId: org.id, userId: user.id, role: 'owner', status: 'active', createdAt: now },
    update: { role: 'owner', status: 'active' },
  });
  const issued = await tx.apiKey.count({
    where: { organizationId: org.id, userId: user.id, name: BOOTSTRAP_KEY_NAME },
  });
  let apiKey: string | null = null;
  if (issued === 0 || input.newKey) {
    const key = await issueApiKey(tx, { organizationId: org.id, owner: { userId: user.id }, name: BOOTSTRAP_KEY_NAME, now });
    apiKey = key.value;
  }
  if (created || apiKey) {
    await recordAudit(tx, {
      organizationId: org.id,
      eventType: created ? 'organization_lifecycle_change' : 'api_key_lifecycle_change',
      source: 'cli_bootstrap',
      target: { organizationId: org.id, userId: user.id },
      payload: { intent: created ? 'bootstrapped' : 'bootstrap_key_issued' },
      at: now,
    });
  }
  return { organizationId: org.id, userId: user.id, apiKey, created };
}

export async function hasAnyOrganization(prisma: PrismaClient): Promise<boolean> {
  return (await prisma.organization.count()) > 0;
}
