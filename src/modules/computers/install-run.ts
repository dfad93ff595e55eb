import type { JobContext } from '../../jobs/job.ts';
import { detectInstallPlans, runInstall } from '../../provisioning/machine/index.ts';
import { SshError } from '../../provisioning/ssh/index.ts';
import { finishInstallRun } from './install.ts';
import type { ComputerJobDeps } from './job-deps.ts';
import { targetFor } from './machines.ts';

const INSTALL_TIMEOUT_MS = 30 * 60_000;
const TAIL_CHARS = 16_384;

/**
 * One install run: detect the repository's package managers and run each install. A dropped
 * connection is retried; anything else (or the last attempt) ends the run as failed, and the
 * session's step follows once every run of the session has ended.
 */
export async function runInstallRun(deps: ComputerJobDeps, runId: string, ctx: JobContext, retryLimit: number): Promise<void> {
  const run = await deps.db.installRun.findUnique({ where: { id: runId }, include: { computer: true } });
  if (!run || run.status === 'completed' || run.status === 'failed') return;
  const finish = (result: Parameters<typeof finishInstallRun>[2]) =>
    deps.db.$transaction((tx) => finishInstallRun(tx, run, result, deps.clock.now()));
  if (run.computer.deletedAt) return finish({ status: 'failed', error: 'the computer was deleted' });

  await deps.db.installRun.update({ where: { id: runId }, data: { status: 'running', startedAt: deps.clock.now() } });
  try {
    const target = await targetFor(deps, run.computer);
    const plans = await detectInstallPlans(deps.ssh, target, run.directory);
    let tail = '';
    for (const plan of plans) {
      const result = await runInstall(deps.ssh, target, plan, { signal: ctx.signal, timeoutMs: INSTALL_TIMEOUT_MS });
      tail = `${tail}$ ${plan.command}\n${result.outputTail}`.slice(-TAIL_CHARS);
      if (result.exitCode !== 0) {
        const how = result.exitCode === null ? 'was killed' : `exited with ${result.exitCode}`;
        return finish({ status: 'failed', plans, exitCode: result.exitCode ?? undefined, outputTail: tail, error: `${plan.command} ${how}` });
      }
    }
    return finish({ status: 'completed', plans, exitCode: 0, outputTail: tail || 'no package manager detected' });
  } catch (err) {
    if (err instanceof SshError && err.kind !== 'host_key_mismatch' && ctx.attempt <= retryLimit) throw err;
    return finish({ status: 'failed', error: err instanceof Error ? err.message : String(err) });
  }
}
