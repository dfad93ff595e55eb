import { createAuthenticator } from '../../src/auth/authenticate.ts';
import type { Principal } from '../../src/auth/principal.ts';
import { requestFence, type AuthEpoch } from '../../src/db/auth-epoch.ts';

export type AuthenticateRequest = (authorization: string | undefined) => Promise<Principal>;

/** An authenticator called as the routes call it: each call is one request, with its own fence. */
export function requestAuthenticator(options: Parameters<typeof createAuthenticator>[0] & { authEpoch: AuthEpoch }): AuthenticateRequest {
  const { authEpoch, ...rest } = options;
  const authenticate = createAuthenticator(rest);
  return (authorization) => authenticate(authorization, requestFence(authEpoch));
}
