import { giteaClient } from './gitea.ts';
import { githubClient } from './github.ts';
import type { ForgeClient, ForgeProvider } from './types.ts';

/** The adapter for a connection's provider; every call goes through `fetch` (the egress guard's). */
export function forgeClient(conn: { provider: ForgeProvider; baseUrl: string; token: string }, fetch: typeof globalThis.fetch): ForgeClient {
  return conn.provider === 'gitea' ? giteaClient(conn.baseUrl, conn.token, fetch) : githubClient(conn.baseUrl, conn.token, fetch);
}
