import type { Principal } from '../../auth/principal.ts';
import type { SshTarget } from '../../provisioning/ssh/index.ts';

/**
 * How the computers module reaches a computer for `principal`: throws NotFound for unknown
 * computers and for those the principal may not use.
 */
export type ResolveComputerTarget = (principal: Principal, computerId: string) => Promise<SshTarget>;
