import type { Principal } from '../auth/principal.ts';
import { AppError } from '../lib/errors.ts';
import type { SshTarget } from '../ssh/index.ts';

/**
 * How the computers module reaches a computer for `principal`: throws NotFound for unknown
 * computers and for those the principal may not use.
 */
export type ResolveComputerTarget = (principal: Principal, computerId: string) => Promise<SshTarget>;

/**
 * For a background job acting for `requestedBy`: the computer's target, or (the computers module
 * refused it) why the job cannot use it, worded for the job's failure.
 */
export async function jobComputerTarget(
  resolve: ResolveComputerTarget,
  requestedBy: unknown,
  computerId: string,
): Promise<{ target: SshTarget } | { reason: string }> {
  try {
    return { target: await resolve(requestedBy as Principal, computerId) };
  } catch (err) {
    if (err instanceof AppError) return { reason: `computer ${computerId} is not available: ${err.message}` };
    throw err;
  }
}
