import { createHash, createHmac } from 'node:crypto';
import { z } from 'zod';
import type { Db } from '../../db/client.ts';
import { defineJobKind, type JobContext } from '../../jobs/job.ts';
import type { SecretBox } from '../../lib/secret-box.ts';
import { computerSetupJob } from './job-kinds.ts';
import { transition } from './lifecycle.ts';

/**
 * Dial-in machines: a program whose stack outputs `agent: true` starts a machine that runs
 * `agentplane agent --registration-token <token>` on boot and dials in through the relay. The
 * token registers exactly its computer, once, until it expires; the computer goes on to its
 * set-up when both its stack is up and its agent has registered (in either order), and fails
 * when the agent has not registered by then.
 */

const TOKEN_PREFIX = 'apreg_';

/** What a dial-in computer's operation allows past its token's expiry: the set-up after a last-second registration. */
const SETUP_AFTER_REGISTRATION_MS = 5 * 60_000;

/** Only the hash is stored; the registration looks the computer up by it. */
export const registrationTokenHash = (token: string) => createHash('sha256').update(token).digest('hex');

/**
 * The computer's registration token, stored as its hash with its expiry. The token is derived
 * from the computer id, so a provisioning retried after a kill passes the program the same token
 * the machine it already started may be holding.
 */
export async function issueRegistrationToken(
  deps: { db: Db; secrets: Pick<SecretBox, 'derive'> },
  computerId: string,
  expiresAt: Date,
  /** An update's `up` may start a new machine: the token is issued again to a registered computer (update-dial-in.ts). */
  opts: { again?: boolean } = {},
): Promise<string> {
  const key = deps.secrets.derive('dial-in registration tokens');
  const token = `${TOKEN_PREFIX}${createHmac('sha256', key).update(computerId).digest('base64url')}`;
  // Provisioning: a computer whose agent registered already keeps its registration (the token is spent).
  // The operation under way (provision, update) lasts at least until the token expires and the
  // set-up after a registration in its last second could run: a registration timeout longer than
  // AGENTPLANE_PROVISION_TIMEOUT_SECONDS is not cut short by the operation's own deadline.
  const outlast = new Date(expiresAt.getTime() + SETUP_AFTER_REGISTRATION_MS);
  await deps.db.$executeRaw`
    UPDATE computers
       SET registration_token_hash = ${registrationTokenHash(token)}, registration_expires_at = ${expiresAt},
           operation_deadline = CASE WHEN operation IS NULL THEN operation_deadline ELSE GREATEST(operation_deadline, ${outlast}) END
     WHERE id = ${computerId} AND (${opts.again ?? false} OR agent_public_key IS NULL)`;
  return token;
}

/** Fails a dial-in computer whose agent has not registered by its token's expiry. */
export const dialInTimeoutJob = defineJobKind({
  name: 'computers.dial-in-timeout',
  payload: z.object({ computerId: z.string().min(1) }),
  retryLimit: 3,
  retryDelaySeconds: 5,
  expireInSeconds: 120,
});

/** Locks the computer's row: the stack's completion and the agent's registration each see the other. */
export async function lockComputer(tx: Db, computerId: string): Promise<void> {
  await tx.$queryRaw`SELECT 1 FROM computers WHERE id = ${computerId} FOR UPDATE`;
}

/**
 * The stack of a dial-in computer is up (call inside the infrastructure step's completion): the
 * computer is reached through its agent from now on. Its set-up is queued at once when the agent
 * registered while the stack was coming up; otherwise the registration queues it, and the
 * timeout fails the computer if that never happens.
 */
export async function awaitRegistration(tx: Db, ctx: Pick<JobContext, 'send'>, computerId: string): Promise<void> {
  await lockComputer(tx, computerId);
  const reached = await transition(tx, computerId, {
    from: { operation: 'provision', deletedAt: null },
    to: { connectionType: 'agent', sshHost: null, sshPort: null, powerState: 'running' },
  });
  if (!reached) return;
  const computer = await tx.computer.findUniqueOrThrow({ where: { id: computerId }, select: { agentPublicKey: true, registrationExpiresAt: true } });
  if (computer.agentPublicKey) {
    await ctx.send(computerSetupJob, { computerId }, { tx });
    return;
  }
  await ctx.send(dialInTimeoutJob, { computerId }, { tx, startAfter: computer.registrationExpiresAt ?? new Date() });
}
