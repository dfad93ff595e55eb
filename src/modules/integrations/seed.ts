import type { GitIntegrationConfig } from '../../config.ts';
import type { PrismaClient } from '../../db/client.ts';
import { newId } from '../../lib/ids.ts';
import type { SecretBox } from '../../lib/secret-box.ts';
import { tokenHint } from './views.ts';

/** github.com is GitHub; any other host is taken for Gitea/Forgejo unless the entry names its provider. */
const providerOf = (c: GitIntegrationConfig) => c.provider ?? (c.host.toLowerCase() === 'github.com' ? 'github' : 'gitea');

/**
 * AGENTPLANE_GIT_INTEGRATIONS seeds forge connections: each start stores the configured ones
 * (tokens encrypted) and removes the seeded ones no longer configured; connections created
 * through the API are left alone unless configuration names the same host, which then wins. An
 * entry naming an unknown organization stops the start, so a typo does not silently drop credentials.
 */
export async function syncGitIntegrations(db: PrismaClient, secrets: SecretBox, configured: GitIntegrationConfig[]): Promise<void> {
  const orgs = await db.organization.findMany({ select: { id: true, name: true } });
  const orgId = (ref: string) => orgs.find((o) => o.id === ref || o.name === ref)?.id;
  const rows = configured.map((c) => {
    const organizationId = orgId(c.organization);
    if (!organizationId) throw new Error(`invalid configuration: AGENTPLANE_GIT_INTEGRATIONS: no organization "${c.organization}"`);
    const host = c.host.toLowerCase();
    return {
      organizationId,
      host,
      username: c.username,
      token: c.token,
      provider: providerOf(c),
      baseUrl: (c.baseUrl ?? `https://${host}`).replace(/\/+$/, ''),
    };
  });
  await db.$transaction(async (tx) => {
    await tx.sourceControlIntegration.deleteMany({
      where: { origin: 'config', NOT: { OR: rows.map((r) => ({ organizationId: r.organizationId, host: r.host })) } },
    });
    for (const r of rows) {
      const data = {
        username: r.username,
        tokenCiphertext: secrets.seal(r.token),
        tokenHint: tokenHint(r.token),
        provider: r.provider,
        baseUrl: r.baseUrl,
        origin: 'config',
        login: null,
      };
      await tx.sourceControlIntegration.upsert({
        where: { organizationId_host: { organizationId: r.organizationId, host: r.host } },
        create: { id: newId('scm'), organizationId: r.organizationId, host: r.host, ...data },
        update: data,
      });
    }
  });
}
