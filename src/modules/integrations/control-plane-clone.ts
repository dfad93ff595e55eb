import type { Db } from '../../db/client.ts';
import { pinClone, type PinnedClone } from '../../repos/pinned-clone.ts';
import type { EgressGuard } from '../../egress/guard.ts';
import type { SecretBox } from '../../lib/secret-box.ts';
import { readRepoUrl } from '../../repos/url.ts';
import { credentialForRepository, gitAuthConfig } from './connections.ts';

/**
 * How the control plane clones a repository itself (readiness evaluations, wiki runs without a
 * computer): only where the egress guard allows, pinned to the addresses it checked, and, for an
 * http(s) URL that carries no credentials of its own, with the organization's connection to that
 * forge, so private repositories clone. (A clone on a computer uses the credentials `refresh`
 * wrote there instead.) Throws the guard's 400 when it refuses the URL.
 */
export async function controlPlaneClone(
  deps: { db: Db; secrets: SecretBox; egress: Pick<EgressGuard, 'check'> },
  organizationId: string,
  repoUrl: string,
): Promise<PinnedClone> {
  const pinned = pinClone(repoUrl, await deps.egress.check(repoUrl));
  const repo = readRepoUrl(repoUrl);
  const http = repo !== undefined && (repo.scheme === 'https' || repo.scheme === 'http');
  const connection = http && !repo.username ? await credentialForRepository(deps.db, deps.secrets, organizationId, repoUrl) : undefined;
  return connection ? { ...pinned, config: [...pinned.config, gitAuthConfig(connection)] } : pinned;
}
