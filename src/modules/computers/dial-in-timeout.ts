import { inTransaction } from '../../db/transaction.ts';
import type { JobContext } from '../../jobs/job.ts';
import { dialInTimeoutJob, lockComputer } from './dial-in.ts';
import type { ComputerJobDeps } from './job-deps.ts';
import { settleProvisioning } from './settle.ts';
import { STEP } from './steps/names.ts';
import { moveStep, provisioningSteps } from './steps/store.ts';

/**
 * The dial-in timeout: a computer still waiting for its agent when its registration token expires
 * fails at its connect step, saying what to check; the token is spent. A registration that came
 * first leaves nothing to do. The computer keeps its stack, as every computer that failed after its
 * infrastructure was made does, until it is deleted (its pool retires it at once).
 */
export async function expireDialIn(deps: ComputerJobDeps, computerId: string, ctx: Pick<JobContext, 'send'>): Promise<void> {
  const now = deps.clock.now();
  const expired = await inTransaction(deps.db, async (tx) => {
    await lockComputer(tx, computerId);
    const c = await tx.computer.findFirst({
      where: { id: computerId, deletedAt: null, operation: 'provision', agentPublicKey: null, registrationTokenHash: { not: null } },
    });
    if (!c) return undefined;
    if (c.registrationExpiresAt && c.registrationExpiresAt > now) {
      await ctx.send(dialInTimeoutJob, { computerId }, { tx, startAfter: c.registrationExpiresAt });
      return undefined;
    }
    await tx.computer.update({ where: { id: computerId }, data: { registrationTokenHash: null, registrationExpiresAt: null } });
    return c;
  });
  if (!expired) return;
  const error =
    `the machine did not dial in by ${expired.registrationExpiresAt?.toISOString() ?? 'its deadline'}: no agent registered with this ` +
    'computer\'s token. Check that the program starts "agentplane agent --url <apiUrl> --registration-token <token> --name <name>" ' +
    'on the machine, and that the machine reaches the control plane at that URL';
  await moveStep(deps.db, computerId, STEP.connect, ['pending', 'running'], { status: 'failed', error, startedAt: now, completedAt: now });
  await provisioningSteps(deps.db, computerId).skipPending('the machine never dialed in');
  await settleProvisioning(deps.db, computerId, now);
}
