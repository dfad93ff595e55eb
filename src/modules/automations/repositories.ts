import type { Principal } from '../../auth/principal.ts';
import type { AutomationsDeps } from './deps.ts';
import { eligible, fromForge, integrationOf, orgForge } from './forge.ts';

/** The connection's account and its organizations; no connection: none, and `connected: false`. */
export async function listOwners(deps: AutomationsDeps, principal: Principal) {
  const forge = await orgForge(deps, principal.organizationId);
  return { owners: forge ? await fromForge(forge, () => forge.client.listOwners()) : [], integration: integrationOf(forge) };
}

/** Repositories automations can be written to, paged through to the end on the forge. */
export async function listRepositories(deps: AutomationsDeps, principal: Principal, owner?: string) {
  const forge = await orgForge(deps, principal.organizationId);
  const all = forge ? await fromForge(forge, () => forge.client.listRepositories()) : [];
  const wanted = owner?.toLowerCase();
  return {
    repositories: all
      .filter((r) => eligible(r) && (!wanted || r.owner.toLowerCase() === wanted))
      .sort((a, b) => a.fullName.localeCompare(b.fullName))
      .map((r) => ({ repoFullName: r.fullName, owner: r.owner, name: r.name, private: r.private, defaultBranch: r.defaultBranch, url: r.htmlUrl })),
    integration: integrationOf(forge),
  };
}
