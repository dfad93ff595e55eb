import { roleAtLeast, type Principal } from '../../auth/principal.ts';
import { egressRefusalIn } from '../../egress/guard.ts';
import { forgeClient } from '../../forge/client.ts';
import { ForgeError, type ForgeAccount } from '../../forge/types.ts';
import { BadRequest, Conflict, NotFound } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import { PUBLIC_API_SOURCE, recordAudit } from '../audit/record.ts';
import type { IntegrationsDeps } from './deps.ts';
import type { CreateIntegrationBody, IntegrationView } from './schemas.ts';
import { integrationView, tokenHint } from './views.ts';

const AUDIT_EVENT = 'source_control_integration_change';

/** A forge's "who am I", as a 400 that carries the forge's own reason when it refuses the token. */
async function verifyToken(deps: Pick<IntegrationsDeps, 'egress'>, body: CreateIntegrationBody): Promise<ForgeAccount> {
  await deps.egress.screen(body.baseUrl);
  try {
    return await forgeClient(body, deps.egress.fetch).whoAmI();
  } catch (err) {
    const refused = egressRefusalIn(err);
    if (refused) throw refused;
    if (err instanceof ForgeError) {
      throw new BadRequest(`The forge at ${body.baseUrl} refused the token (${err.status}): ${err.reason || 'no reason given'}`, {
        metadata: { forgeStatus: err.status, forgeReason: err.reason },
      });
    }
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    throw new BadRequest(
      `Cannot reach the forge at ${body.baseUrl} to verify the token: ${cause?.code ?? cause?.message ?? (err as Error).message}; check baseUrl`,
    );
  }
}

export function createIntegrationsService(deps: IntegrationsDeps) {
  const { db, clock, secrets } = deps;
  const find = async (principal: Principal, id: string) => {
    const row = await db.sourceControlIntegration.findFirst({ where: { id, organizationId: principal.organizationId } });
    if (!row) throw new NotFound(`No source-control integration ${id} in this organization`);
    return row;
  };
  const withToken = (p: Principal) => roleAtLeast(p.role, 'manager');

  return {
    async list(principal: Principal): Promise<{ integrations: IntegrationView[] }> {
      const rows = await db.sourceControlIntegration.findMany({
        where: { organizationId: principal.organizationId },
        orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
      });
      return { integrations: rows.map((r) => integrationView(r, { withToken: withToken(principal) })) };
    },

    async get(principal: Principal, id: string): Promise<IntegrationView> {
      return integrationView(await find(principal, id), { withToken: withToken(principal) });
    },

    /** Verified with the forge before anything is stored. */
    async create(principal: Principal, body: CreateIntegrationBody): Promise<IntegrationView> {
      const baseUrl = body.baseUrl.replace(/\/+$/, '');
      const host = new URL(baseUrl).host.toLowerCase();
      const taken = await db.sourceControlIntegration.findFirst({ where: { organizationId: principal.organizationId, host }, select: { id: true } });
      if (taken) throw new Conflict(`This organization already has a connection to ${host} (${taken.id}); delete it first to replace its token`);
      const account = await verifyToken(deps, { ...body, baseUrl });
      const now = clock.now();
      const row = await db.$transaction(async (tx) => {
        const created = await tx.sourceControlIntegration.create({
          data: {
            id: newId('scm'),
            organizationId: principal.organizationId,
            host,
            provider: body.provider,
            baseUrl,
            username: body.username ?? account.login,
            login: account.login,
            tokenCiphertext: secrets.seal(body.token),
            tokenHint: tokenHint(body.token),
            origin: 'api',
            createdBy: principal.kind === 'user' ? principal.userId : principal.serviceAccountId,
            createdAt: now,
          },
        });
        await recordAudit(tx, {
          organizationId: principal.organizationId,
          eventType: AUDIT_EVENT,
          source: PUBLIC_API_SOURCE,
          actor: principal,
          target: { integrationId: created.id },
          after: { provider: body.provider, baseUrl, login: account.login },
          payload: { action: 'created' },
          at: now,
        });
        return created;
      });
      return { ...integrationView(row, { withToken: true }), scopes: account.scopes };
    },

    async remove(principal: Principal, id: string): Promise<void> {
      const row = await find(principal, id);
      await db.$transaction(async (tx) => {
        await tx.sourceControlIntegration.delete({ where: { id: row.id } });
        // The scan cache was read through this connection.
        await tx.ciScanCache.deleteMany({ where: { organizationId: row.organizationId, integrationId: row.id } });
        await recordAudit(tx, {
          organizationId: row.organizationId,
          eventType: AUDIT_EVENT,
          source: PUBLIC_API_SOURCE,
          actor: principal,
          target: { integrationId: row.id },
          before: { provider: row.provider, baseUrl: row.baseUrl, login: row.login },
          payload: { action: 'deleted' },
          at: clock.now(),
        });
      });
    },
  };
}
export type IntegrationsService = ReturnType<typeof createIntegrationsService>;
