import { Forbidden } from '../lib/errors.ts';
import { roleAtLeast, type Principal } from './principal.ts';

/** An authorization rule a route declares; it throws when the principal may not proceed. */
export type Guard = (principal: Principal) => void;

export const managerOrHigher: Guard = (p) => {
  if (!roleAtLeast(p.role, 'manager')) {
    throw new Forbidden('This operation requires the manager or owner role; ask an organization owner for access');
  }
};

export const humanOnly: Guard = (p) => {
  if (p.kind !== 'user') {
    throw new Forbidden('Service account credentials cannot be used here; authenticate as a human user');
  }
};

/** Sessions are available only to the organizations AGENTPLANE_SESSIONS_ORGS selects. */
export function sessionsEnabled(orgs: '*' | ReadonlySet<string>): Guard {
  return (p) => {
    if (orgs !== '*' && !orgs.has(p.organizationId)) {
      throw new Forbidden('Sessions are not enabled for this organization');
    }
  };
}
