import { forgeClient } from '../../forge/client.ts';
import { ForgeError } from '../../forge/types.ts';
import { AppError, BadGateway } from '../../lib/errors.ts';
import type { ForgeClient } from '../../forge/types.ts';
import { automationConnection, type ForgeConnection } from '../integrations/connections.ts';
import type { AutomationsDeps } from './deps.ts';

export interface OrgForge {
  connection: ForgeConnection;
  client: ForgeClient;
}

/** The organization's forge, or undefined when it has no connection (answers say `connected: false`). */
export async function orgForge(deps: Pick<AutomationsDeps, 'db' | 'secrets' | 'egress'>, organizationId: string): Promise<OrgForge | undefined> {
  const connection = await automationConnection(deps.db, deps.secrets, organizationId);
  return connection ? { connection, client: forgeClient(connection, deps.egress.fetch) } : undefined;
}

export const integrationOf = (forge: OrgForge | undefined) =>
  forge ? { connected: true, provider: forge.connection.provider, baseUrl: forge.connection.baseUrl } : { connected: false };

/** Repositories an automation can be written to: not archived, and the token may push. */
export const eligible = (r: { archived: boolean; canPush: boolean }) => !r.archived && r.canPush;

/** A failure's message for an answer: the forge's own reason where there is one. */
export const failureMessage = (err: unknown) => (err instanceof Error ? err.message : String(err));

/**
 * A read the whole answer depends on: a forge that fails it is a 502 naming the forge and its own
 * reason (a revoked token says so), not an anonymous 500. Egress refusals stay the 400 they are.
 */
export async function fromForge<T>(forge: OrgForge, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof AppError) throw err;
    const where = `The forge at ${forge.connection.baseUrl}`;
    if (err instanceof ForgeError) {
      const hint = err.status === 401 ? "; the connection's token was refused: connect again with a valid one at /api/v0/integrations/source-control" : '';
      throw new BadGateway(`${where} failed: ${err.message}${hint}`, { metadata: { forgeStatus: err.status, forgeReason: err.reason } });
    }
    const cause = (err as { cause?: { code?: string } }).cause;
    throw new BadGateway(`${where} cannot be reached: ${cause?.code ?? (err as Error).message}`);
  }
}
