import type { Db } from '../../db/client.ts';
import type { SourceControlIntegration } from '../../generated/prisma/client.ts';
import type { SecretBox } from '../../lib/secret-box.ts';
import type { ForgeProvider } from '../../forge/types.ts';
import { repositoryHost } from '../../repos/policy.ts';

/** A connection with its token opened: what a module needs to call a forge or clone from it. */
export interface ForgeConnection {
  id: string;
  provider: ForgeProvider;
  baseUrl: string;
  host: string;
  username: string;
  token: string;
}

function openConnection(row: SourceControlIntegration, secrets: SecretBox): ForgeConnection {
  return {
    id: row.id,
    provider: row.provider === 'gitea' ? 'gitea' : 'github',
    baseUrl: row.baseUrl || `https://${row.host}`,
    host: row.host,
    username: row.username,
    token: secrets.open(row.tokenCiphertext),
  };
}

/**
 * The organization's credential for a repository URL (refresh, wiki runs, readiness clones of
 * private repositories): the connection whose host is the URL's; undefined when there is none.
 */
export async function credentialForRepository(db: Db, secrets: SecretBox, organizationId: string, repoUrl: string): Promise<ForgeConnection | undefined> {
  const host = repositoryHost(repoUrl);
  if (!host) return undefined;
  const row = await db.sourceControlIntegration.findFirst({ where: { organizationId, host } });
  return row ? openConnection(row, secrets) : undefined;
}

/**
 * A git setting that authenticates http(s) fetches with the connection's token (HTTP basic, as
 * GitHub, Gitea and Forgejo all accept it), for a clone the control plane makes itself.
 */
export function gitAuthConfig(conn: Pick<ForgeConnection, 'username' | 'token'>): string {
  return `http.extraHeader=Authorization: Basic ${Buffer.from(`${conn.username}:${conn.token}`).toString('base64')}`;
}

/**
 * The connection CI automations use: the oldest connection of a provider whose API agentplane
 * speaks. Undefined: the organization has none (the automation endpoints answer `connected: false`).
 */
export async function automationConnection(db: Db, secrets: SecretBox, organizationId: string): Promise<ForgeConnection | undefined> {
  const row = await db.sourceControlIntegration.findFirst({
    where: { organizationId, provider: { in: ['github', 'gitea'] } },
    orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
  });
  return row ? openConnection(row, secrets) : undefined;
}
