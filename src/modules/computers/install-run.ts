import type { Db } from '../../db/client.ts';
import { inTransaction } from '../../db/transaction.ts';
import type { InstallRun } from '../../generated/prisma/client.ts';
import type { JobContext } from '../../jobs/job.ts';
import { detectInstallPlans, runInstall } from '../../provisioning/machine/index.ts';
import { SSH_RETRY } from '../../ssh/index.ts';
import { concludeInstallSession } from './install.ts';
import type { ComputerJobDeps } from './job-deps.ts';
import { targetFor } from './machines.ts';
import { runSteps, StepFailure, type Step, type StepStatus, type StepStore } from './steps/runner.ts';

const INSTALL_TIMEOUT_MS = 30 * 60_000;
const TAIL_CHARS = 16_384;
/** An install run is a list of one step, stored on the run itself. */
const INSTALL = 'install';

/**
 * One install run: detect the repository's package managers and run each install, as one step:
 * the SSH layer's transient failures are tried again within its budget; anything else ends the
 * run as failed, and the session's step follows once every run of the session has ended.
 */
export async function runInstallRun(deps: ComputerJobDeps, runId: string, ctx: JobContext): Promise<void> {
  const run = await deps.db.installRun.findUnique({ where: { id: runId }, include: { computer: true } });
  if (!run) return;
  const now = () => deps.clock.now();
  const store = installRunStore(deps.db, run, now);
  if (run.computer.deletedAt) {
    await store.move(INSTALL, ['pending', 'running'], { status: 'failed', error: 'the computer was deleted', completedAt: now() });
    return;
  }
  const install: Step = {
    id: INSTALL,
    retry: SSH_RETRY,
    run: async ({ signal }) => {
      const target = await targetFor(deps, run.computer);
      const plans = await detectInstallPlans(deps.ssh, target, run.directory);
      let tail = '';
      for (const plan of plans) {
        const result = await runInstall(deps.ssh, target, plan, { signal, timeoutMs: INSTALL_TIMEOUT_MS });
        tail = `${tail}$ ${plan.command}\n${result.outputTail}`.slice(-TAIL_CHARS);
        if (result.exitCode !== 0) {
          const how = result.exitCode === null ? 'was killed' : `exited with ${result.exitCode}`;
          throw new StepFailure(`${plan.command} ${how}`, { plans, exitCode: result.exitCode ?? undefined, outputTail: tail });
        }
      }
      return { fields: { plans, exitCode: 0, outputTail: tail || 'no package manager detected' } };
    },
  };
  await runSteps(store, [install], { signal: ctx.signal, now, provider: run.computer.providerType, warn: (msg, err) => ctx.log.warn({ err, runId }, msg) });
}

const STEP_OF_RUN: Record<string, StepStatus> = { queued: 'pending', running: 'running', completed: 'completed', failed: 'failed' };
const RUN_OF_STEP: Partial<Record<StepStatus, string>> = { pending: 'queued', running: 'running', completed: 'completed', failed: 'failed' };

/** An install run's row as the runner's store; a run that ends concludes its session in the same transaction. */
function installRunStore(db: Db, run: Pick<InstallRun, 'id' | 'computerId' | 'installSessionId'>, now: () => Date): StepStore {
  return {
    async list() {
      const row = await db.installRun.findUniqueOrThrow({ where: { id: run.id } });
      return [{ id: INSTALL, status: STEP_OF_RUN[row.status]!, startedAt: row.startedAt }];
    },
    async move(_id, from, change) {
      return inTransaction(db, async (tx) => {
        const [row] = await tx.$queryRaw<{ status: string }[]>`SELECT status FROM install_runs WHERE id = ${run.id} FOR UPDATE`;
        if (!row || !from.includes(STEP_OF_RUN[row.status]!)) return false;
        const { status, fields, ...patch } = typeof change === 'function' ? await change(tx) : change;
        const runStatus = RUN_OF_STEP[status];
        if (!runStatus) throw new Error(`an install run cannot be ${status}`);
        await tx.installRun.update({ where: { id: run.id }, data: { ...patch, ...fields, status: runStatus } as never });
        if (runStatus === 'completed' || runStatus === 'failed') await concludeInstallSession(tx, run, now());
        return true;
      });
    },
    skipPending: async () => {},
  };
}
