import type { EgressGuard } from '../../egress/guard.ts';
import type { Principal } from '../../auth/principal.ts';
import type { PrismaClient } from '../../db/client.ts';
import type { PageQuery } from '../../http/pagination.ts';
import type { Clock } from '../../lib/clock.ts';
import type { SecretBox } from '../../lib/secret-box.ts';
import { getGlobalLimit, getUserLimits, setGlobalLimit, setUserLimits } from './credit-limits.ts';
import { getEnterpriseControls, listEnterpriseControlChanges, setEnterpriseControls } from './enterprise-controls.ts';
import { inviteUser, listUsers, removeUser } from './members.ts';
import type { TurnLimits } from '../sessions/turn-admission.ts';
import { getTurnQueue } from './turn-queue.ts';
import type { EnterpriseControlsBody, InviteBody, UserLimitsBody } from './schemas.ts';

export interface OrganizationDeps {
  db: PrismaClient;
  clock: Clock;
  /** Seals the API keys of the organization's custom models. */
  secrets: Pick<SecretBox, 'seal' | 'open'>;
  /** Custom models' base URLs must pass it. */
  egress: Pick<EgressGuard, 'screen'>;
  /** Running-turn limits in force (configuration; DEFAULT_TURN_LIMITS where a caller has none). */
  turnLimits?: TurnLimits;
}

/** Organization management; every operation acts inside the caller's own organization. */
export function createOrganizationService(deps: OrganizationDeps) {
  return {
    listUsers: (actor: Principal, page: PageQuery) => listUsers(deps, actor, page),
    inviteUser: (actor: Principal, body: InviteBody) => inviteUser(deps, actor, body),
    removeUser: (actor: Principal, email: string) => removeUser(deps, actor, email),
    getGlobalLimit: (actor: Principal) => getGlobalLimit(deps, actor),
    setGlobalLimit: (actor: Principal, limit: number | null) => setGlobalLimit(deps, actor, limit),
    getUserLimits: (actor: Principal) => getUserLimits(deps, actor),
    setUserLimits: (actor: Principal, body: UserLimitsBody) => setUserLimits(deps, actor, body),
    getEnterpriseControls: (actor: Principal) => getEnterpriseControls(deps, actor),
    setEnterpriseControls: (actor: Principal, body: EnterpriseControlsBody) => setEnterpriseControls(deps, actor, body.settings),
    listEnterpriseControlChanges: (actor: Principal, page: PageQuery) => listEnterpriseControlChanges(deps, actor, page),
    getTurnQueue: (actor: Principal) => getTurnQueue(deps, actor),
  };
}
export type OrganizationService = ReturnType<typeof createOrganizationService>;
