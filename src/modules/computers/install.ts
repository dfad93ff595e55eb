import type { Db } from '../../db/client.ts';
import type { Computer } from '../../generated/prisma/client.ts';
import type { JobQueue } from '../../jobs/queue.ts';
import { BadRequest, Conflict } from '../../lib/errors.ts';
import { newId, newUuid } from '../../lib/ids.ts';
import { installRunJob } from './job-kinds.ts';
import { settleProvisioning } from './settle.ts';
import { STEP } from './steps/names.ts';
import { nextStepPosition } from './steps/store.ts';

/**
 * Starts an install session on request (`POST install-deps`): the `install-deps` step goes to
 * running and one durable install run per cloned repository is queued, all in one transaction. A
 * session already running is a 409: the step row is locked and compared, so two concurrent
 * requests cannot both start one. (Set-up starts its session as a step: `queueInstallRuns`.)
 */
export async function startInstallSession(
  tx: Db,
  queue: Pick<JobQueue, 'send'>,
  computer: Pick<Computer, 'id' | 'name' | 'clonedRepoDirectories'>,
  now: Date,
): Promise<string> {
  if (computer.clonedRepoDirectories.length === 0) {
    throw new BadRequest(`Computer "${computer.name}" has no cloned repositories to install dependencies in`);
  }
  const [step] = await tx.$queryRaw<{ status: string; position: number }[]>`
    SELECT status, position FROM provisioning_steps
    WHERE computer_id = ${computer.id} AND id = ${STEP.installDeps} FOR UPDATE`;
  if (step?.status === 'running') throw new Conflict('Dependency installation already in progress');
  const sessionId = newUuid();
  const running = { status: 'running', error: null, startedAt: now, completedAt: null, installSessionId: sessionId };
  if (step) {
    await tx.provisioningStep.update({ where: { computerId_id: { computerId: computer.id, id: STEP.installDeps } }, data: running });
  } else {
    await tx.provisioningStep.create({
      data: { ...running, computerId: computer.id, id: STEP.installDeps, name: 'Installing dependencies', position: await nextStepPosition(tx, computer.id) },
    });
  }
  await queueInstallRuns(tx, queue, computer, sessionId, now);
  return sessionId;
}

/** One queued install run per cloned repository, of the session `sessionId`. */
export async function queueInstallRuns(
  tx: Db,
  queue: Pick<JobQueue, 'send'>,
  computer: Pick<Computer, 'id' | 'clonedRepoDirectories'>,
  sessionId: string,
  now: Date,
): Promise<void> {
  for (const directory of computer.clonedRepoDirectories) {
    const runId = newId('inst');
    await tx.installRun.create({ data: { id: runId, computerId: computer.id, installSessionId: sessionId, directory, status: 'queued', createdAt: now } });
    await queue.send(installRunJob, { runId }, { tx });
  }
}

/**
 * Called as each run ends, in the transaction that ended it: the last run of the session
 * completes the step, or fails it naming every repository that failed. The step row lock
 * serializes runs finishing at the same time.
 */
export async function concludeInstallSession(tx: Db, run: { computerId: string; installSessionId: string }, now: Date): Promise<void> {
  await tx.$queryRaw`SELECT 1 FROM provisioning_steps WHERE computer_id = ${run.computerId} AND id = ${STEP.installDeps} FOR UPDATE`;
  const runs = await tx.installRun.findMany({ where: { computerId: run.computerId, installSessionId: run.installSessionId } });
  if (runs.some((r) => r.status === 'queued' || r.status === 'running')) return;
  const failed = runs.filter((r) => r.status === 'failed');
  await tx.provisioningStep.updateMany({
    where: { computerId: run.computerId, id: STEP.installDeps, installSessionId: run.installSessionId },
    data: {
      status: failed.length ? 'failed' : 'completed',
      error: failed.length ? failed.map((r) => `${r.directory}: ${r.error ?? 'failed'}`).join('; ') : null,
      completedAt: now,
    },
  });
  await settleProvisioning(tx, run.computerId, now);
}
