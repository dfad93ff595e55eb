import { forgeClient } from '../../forge/client.ts';
import type { ForgeClient } from '../../forge/types.ts';
import { automationConnection, type ForgeConnection } from '../integrations/connections.ts';
import type { AutomationsDeps } from './deps.ts';

export interface OrgForge {
  connection: ForgeConnection;
  client: ForgeClient;
}

/** The organization's forge, or undefined when it has no connection (answers say `connected: false`). */
export async function orgForge(deps: AutomationsDeps, organizationId: string): Promise<OrgForge | undefined> {
  const connection = await automationConnection(deps.db, deps.secrets, organizationId);
  return connection ? { connection, client: forgeClient(connection, deps.egress.fetch) } : undefined;
}

export const integrationOf = (forge: OrgForge | undefined) =>
  forge ? { connected: true, provider: forge.connection.provider, baseUrl: forge.connection.baseUrl } : { connected: false };

/** Repositories an automation can be written to: not archived, and the token may push. */
export const eligible = (r: { archived: boolean; canPush: boolean }) => !r.archived && r.canPush;

/** A failure's message for an answer: the forge's own reason where there is one. */
export const failureMessage = (err: unknown) => (err instanceof Error ? err.message : String(err));
