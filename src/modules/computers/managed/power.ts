import type { JobContext } from '../../../jobs/job.ts';
import type { ComputerJobDeps } from '../job-deps.ts';
import { end, transition } from '../lifecycle.ts';
import { targetFor } from '../machines.ts';
import { Conflict } from '../../../lib/errors.ts';
import type { Computer } from '../../../generated/prisma/client.ts';
import { programConfig, stackProgramOf } from './program-input.ts';
import { SSH_WAIT_MS } from './settings.ts';
import { waitForSsh } from '../wait-for-ssh.ts';

/**
 * Pause or resume: `pulumi up` with `running` flipped. A resume ends once SSH answers again. A
 * failure leaves the power state as it was and says why in `operationError`.
 */
export async function runPowerChange(deps: ComputerJobDeps, computerId: string, operation: 'pause' | 'resume', ctx: JobContext) {
  const computer = await deps.db.computer.findFirst({ where: { id: computerId, deletedAt: null, operation } });
  if (!computer) return;
  const running = operation === 'resume';
  try {
    refuseUnpausable(computer);
    const program = await stackProgramOf(deps, computer, ctx.signal);
    await deps.provisioner.stacks.up(program, programConfig(computer, running), { signal: ctx.signal, log: ctx.log });
    if (running) {
      const target = await targetFor(deps, { ...computer, powerState: 'running' });
      await waitForSsh(deps.ssh, target, { signal: ctx.signal, timeoutMs: SSH_WAIT_MS });
    }
    const powerState = running ? 'running' : 'paused';
    await transition(deps.db, computerId, {
      from: { operation },
      to: { powerState, ...end(), ...(running ? { lastActiveAt: deps.clock.now() } : {}) },
      event: { powerState },
    });
    ctx.log.info({ computerId, operation }, running ? 'computer resumed' : 'computer paused');
  } catch (err) {
    if (ctx.signal.aborted) throw err;
    ctx.log.warn({ err, computerId, operation }, 'changing the power state failed');
    await transition(deps.db, computerId, { from: { operation }, to: end(err instanceof Error ? err.message : String(err)) });
  }
}

/**
 * A program computer whose stack did not output `pausable: true` cannot pause or resume: its
 * program does not stop the machine when `agentplane:running` is "false". (Built-ins pause.)
 */
export function refuseUnpausable(computer: Pick<Computer, 'name' | 'programPausable'>): void {
  if (computer.programPausable === false) {
    throw new Conflict(
      `Computer "${computer.name}" cannot pause or resume: its template's program does not declare it. A program that stops the ` +
        'machine while the stack config agentplane:running is "false" (and starts it again when "true") outputs "pausable: true"',
    );
  }
}
