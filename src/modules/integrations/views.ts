import type { SourceControlIntegration } from '../../generated/prisma/client.ts';
import type { IntegrationView } from './schemas.ts';

/** Only the last four characters of a token are kept in the clear, and shown only to those who may write. */
export const tokenHint = (token: string) => (token.length > 8 ? token.slice(-4) : '');

export function integrationView(row: SourceControlIntegration, opts: { withToken: boolean }): IntegrationView {
  return {
    id: row.id,
    provider: row.provider === 'gitea' ? 'gitea' : 'github',
    baseUrl: row.baseUrl,
    host: row.host,
    username: row.username,
    login: row.login,
    ...(opts.withToken ? { token: `••••••••${row.tokenHint}` } : {}),
    origin: row.origin === 'api' ? 'api' : 'config',
    createdAt: row.createdAt.getTime(),
  };
}
