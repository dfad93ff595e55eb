import type { Db } from '../../db/client.ts';
import type { Computer } from '../../generated/prisma/client.ts';
import type { JobQueue } from '../../jobs/queue.ts';
import { BadRequest, Conflict } from '../../lib/errors.ts';
import { newId, newUuid } from '../../lib/ids.ts';
import { installRunJob } from './job-kinds.ts';
import { settleProvisioning } from './settle.ts';
import { STEP } from './steps/names.ts';
import type { StepStatus } from './steps/runner.ts';
import { moveStep, putStep } from './steps/store.ts';

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
  const [step] = await tx.$queryRaw<{ status: string }[]>`
    SELECT status FROM provisioning_steps
    WHERE computer_id = ${computer.id} AND id = ${STEP.installDeps} FOR UPDATE`;
  if (step?.status === 'running') throw new Conflict('Dependency installation already in progress');
  const sessionId = newUuid();
  await putStep(
    tx,
    computer.id,
    { id: STEP.installDeps, name: 'Installing dependencies' },
    {
      status: 'running',
      error: null,
      startedAt: now,
      completedAt: null,
      fields: { installSessionId: sessionId },
    },
  );
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
  const [step] = await tx.$queryRaw<{ status: StepStatus; install_session_id: string | null }[]>`
    SELECT status, install_session_id FROM provisioning_steps WHERE computer_id = ${run.computerId} AND id = ${STEP.installDeps} FOR UPDATE`;
  const runs = await tx.installRun.findMany({ where: { computerId: run.computerId, installSessionId: run.installSessionId } });
  if (runs.some((r) => r.status === 'queued' || r.status === 'running')) return;
  const failed = runs.filter((r) => r.status === 'failed');
  if (step?.install_session_id === run.installSessionId) {
    await moveStep(tx, run.computerId, STEP.installDeps, [step.status], {
      status: failed.length ? 'failed' : 'completed',
      error: failed.length ? failed.map((r) => `${r.directory}: ${r.error ?? 'failed'}`).join('; ') : null,
      completedAt: now,
    });
  }
  await settleProvisioning(tx, run.computerId, now);
}
