import type { JobContext } from '../../../jobs/job.ts';
import { describeHostKey } from '../../../ssh/index.ts';
import type { ComputerJobDeps } from '../job-deps.ts';
import type { Computer } from '../../../generated/prisma/client.ts';
import { awaitRegistration, issueRegistrationToken } from '../dial-in.ts';
import { computerSetupJob } from '../job-kinds.ts';
import { transition } from '../lifecycle.ts';
import { settleProvisioning } from '../settle.ts';
import { runSteps, type Step } from '../steps/runner.ts';
import { STEP } from '../steps/names.ts';
import { provisioningSteps } from '../steps/store.ts';
import type { ProgramEndpoint, StackProgram } from '../../../provisioning/programs/index.ts';
import { programConfig, stackProgramOf } from './program-input.ts';

// The schema's default for templates' registrationTimeoutSeconds.
const DEFAULT_REGISTRATION_TIMEOUT_SECONDS = 600;

/**
 * Provisioning's stack operation: `pulumi up` of the computer's stack, the infrastructure step.
 * Completing it stores how to reach the computer and queues its set-up (SSH, workspace, clones,
 * dependencies) as a job of its own, in one transaction: the stack lock is held for Pulumi only.
 * A template's program that outputs `agent: true` dials in instead: the computer waits for its
 * agent's registration (dial-in.ts), which queues the set-up.
 * A failed `up` leaves the computer in `error` with the step's error; what was created stays
 * tracked in the stack for the teardown (a template's program is destroyed at once instead). A run
 * cut short (the control plane killed) is run again by the queue and resumes here.
 */
export async function runProvision(deps: ComputerJobDeps, computerId: string, ctx: JobContext): Promise<void> {
  const computer = await deps.db.computer.findFirst({ where: { id: computerId, deletedAt: null, operation: 'provision' } });
  if (!computer) return;
  const step = await deps.db.provisioningStep.findUnique({ where: { computerId_id: { computerId, id: STEP.infrastructure } } });
  if (step?.status === 'completed') {
    // A dial-in machine's set-up is queued by its registration (or its timeout fails it).
    if (computer.connectionType === 'agent' && !computer.agentPublicKey) return;
    // A retried run after the stack came up: the set-up was queued with it; queueing it again is
    // harmless (serialized per computer, idempotent by step) and covers a set-up lost meanwhile.
    await ctx.send(computerSetupJob, { computerId });
    return;
  }
  const infrastructure: Step = {
    id: STEP.infrastructure,
    stopsOnFailure: 'the computer could not be created',
    run: async ({ signal, resumed }) => {
      const program = await stackProgramOf(deps, computer, signal);
      // A template's program may start a machine that dials in: it gets the computer's token.
      const registrationToken =
        program.kind === 'yaml' ? await issueRegistrationToken(deps, computerId, await registrationDeadline(deps, computer)) : undefined;
      const endpoint = await upOrClean(deps, ctx, program, programConfig(computer, true, { registrationToken }), { signal, fresh: !resumed });
      if (endpoint.kind === 'agent') {
        return {
          complete: async (tx) => {
            await tx.computer.updateMany({ where: { id: computerId, operation: 'provision' }, data: { programPausable: endpoint.pausable } });
            await awaitRegistration(tx, ctx, computerId);
          },
        };
      }
      const hostKeyFingerprint = fingerprintOfLine(endpoint.hostKey);
      return {
        complete: async (tx) => {
          // A machine reached over SSH never registers: its token is spent.
          const token = registrationToken ? { registrationTokenHash: null, registrationExpiresAt: null } : {};
          const reached = await transition(tx, computerId, {
            from: { operation: 'provision' },
            to: {
              connectionType: 'direct',
              sshHost: endpoint.host,
              sshPort: endpoint.port,
              remoteUser: endpoint.user,
              hostKeyFingerprint,
              powerState: 'running',
              programPausable: endpoint.pausable,
              ...token,
            },
          });
          if (reached) await ctx.send(computerSetupJob, { computerId }, { tx });
        },
      };
    },
  };
  const result = await runSteps(provisioningSteps(deps.db, computerId), [infrastructure], {
    signal: ctx.signal,
    now: () => deps.clock.now(),
    provider: computer.providerType,
    warn: (_msg, err) => ctx.log.warn({ err, computerId }, 'creating the computer failed'),
  });
  if (result === 'failed') await settleProvisioning(deps.db, computerId, deps.clock.now());
}

/**
 * `pulumi up`; when a template's program fails (Pulumi's error, or outputs that miss the
 * contract), its stack is destroyed at once so nothing is left behind, and the error stands. A
 * built-in's stack stays for the teardown, as before; an interrupted run (abort) is retried as is.
 */
async function upOrClean(
  deps: ComputerJobDeps,
  ctx: JobContext,
  program: StackProgram,
  config: ReturnType<typeof programConfig>,
  opts: { signal: AbortSignal; fresh: boolean },
): Promise<ProgramEndpoint> {
  try {
    return await deps.provisioner.stacks.up(program, config, { ...opts, log: ctx.log });
  } catch (err) {
    if (program.kind !== 'yaml' || opts.signal.aborted) throw err;
    await deps.provisioner.stacks.destroy(program, config, { signal: opts.signal, log: ctx.log }).catch((cleanup: unknown) => {
      ctx.log.warn({ err: cleanup, computerId: config.computerId }, "destroying a failed program's stack failed; the teardown retries it");
    });
    throw err;
  }
}

/** When a dial-in machine must have registered by: the template's registration timeout from now. */
export async function registrationDeadline(deps: ComputerJobDeps, computer: Computer): Promise<Date> {
  const version = computer.templateVersionId
    ? await deps.db.computerTemplateVersion.findUnique({
        where: { id: computer.templateVersionId },
        select: { template: { select: { registrationTimeoutSeconds: true } } },
      })
    : null;
  const seconds = version?.template.registrationTimeoutSeconds ?? DEFAULT_REGISTRATION_TIMEOUT_SECONDS;
  return new Date(deps.clock.now().getTime() + seconds * 1000);
}

/** The `SHA256:...` fingerprint of an OpenSSH host key line (`type base64 [comment]`). */
export function fingerprintOfLine(line: string): string {
  const blob = line.trim().split(/\s+/)[1];
  if (!blob) throw new Error(`the provider reported no usable host key: ${JSON.stringify(line)}`);
  return describeHostKey(Buffer.from(blob, 'base64')).fingerprint;
}
