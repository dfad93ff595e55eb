import type { GitIntegrationConfig } from '../../config.ts';
import type { PrismaClient } from '../../db/client.ts';
import { newId } from '../../lib/ids.ts';
import type { SecretBox } from '../../lib/secret-box.ts';

/**
 * Configuration is the source of truth for source-control integrations until an API exists:
 * each start stores the configured ones (tokens encrypted) and removes the rest. An integration
 * naming an unknown organization stops the start, so a typo does not silently drop credentials.
 */
export async function syncGitIntegrations(db: PrismaClient, secrets: SecretBox, configured: GitIntegrationConfig[]): Promise<void> {
  const orgs = await db.organization.findMany({ select: { id: true, name: true } });
  const orgId = (ref: string) => orgs.find((o) => o.id === ref || o.name === ref)?.id;
  const rows = configured.map((c) => {
    const organizationId = orgId(c.organization);
    if (!organizationId) throw new Error(`invalid configuration: AGENTPLANE_GIT_INTEGRATIONS: no organization "${c.organization}"`);
    return { organizationId, host: c.host.toLowerCase(), username: c.username, token: c.token };
  });
  await db.$transaction(async (tx) => {
    await tx.sourceControlIntegration.deleteMany({
      where: { NOT: { OR: rows.map((r) => ({ organizationId: r.organizationId, host: r.host })) } },
    });
    for (const r of rows) {
      const data = { username: r.username, tokenCiphertext: secrets.seal(r.token) };
      await tx.sourceControlIntegration.upsert({
        where: { organizationId_host: { organizationId: r.organizationId, host: r.host } },
        create: { id: newId('scm'), organizationId: r.organizationId, host: r.host, ...data },
        update: data,
      });
    }
  });
}
