import type { Db } from '../../db/client.ts';
import type { Computer } from '../../generated/prisma/client.ts';
import type { JobQueue } from '../../jobs/queue.ts';
import { BadRequest, Conflict } from '../../lib/errors.ts';
import { newId, newUuid } from '../../lib/ids.ts';
import { installRunJob } from './jobs.ts';
import { settleProvisioning } from './managed/settle.ts';
import { STEP } from './steps.ts';

/**
 * Starts an install session: the `install-deps` step goes to running and one durable install
 * run per cloned repository is queued, all in one transaction. A session already running is a
 * 409: the step row is locked and compared, so two concurrent requests cannot both start one.
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
    const last = await tx.provisioningStep.aggregate({ where: { computerId: computer.id }, _max: { position: true } });
    await tx.provisioningStep.create({
      data: { ...running, computerId: computer.id, id: STEP.installDeps, name: 'Installing dependencies', position: (last._max.position ?? -1) + 1 },
    });
  }
  for (const directory of computer.clonedRepoDirectories) {
    const runId = newId('inst');
    await tx.installRun.create({ data: { id: runId, computerId: computer.id, installSessionId: sessionId, directory, status: 'queued', createdAt: now } });
    await queue.send(installRunJob, { runId }, { tx });
  }
  return sessionId;
}

/**
 * Called as each run ends: the last run of the session completes the step, or fails it naming
 * every repository that failed. The step row lock serializes runs finishing at the same time.
 */
export async function finishInstallRun(
  tx: Db,
  run: { id: string; computerId: string; installSessionId: string },
  result: { status: 'completed' | 'failed'; exitCode?: number; outputTail?: string; error?: string; plans?: unknown },
  now: Date,
): Promise<void> {
  await tx.$queryRaw`SELECT 1 FROM provisioning_steps WHERE computer_id = ${run.computerId} AND id = ${STEP.installDeps} FOR UPDATE`;
  await tx.installRun.update({
    where: { id: run.id },
    data: {
      status: result.status,
      exitCode: result.exitCode,
      outputTail: result.outputTail,
      error: result.error,
      plans: (result.plans ?? undefined) as never,
      completedAt: now,
    },
  });
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
