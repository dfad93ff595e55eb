import type { Computer } from '../../../generated/prisma/client.ts';
import type { JobContext } from '../../../jobs/job.ts';
import { cloneRepo } from '../../../repos/computer-clone.ts';
import { shellQuote, SSH_RETRY, type SshTarget } from '../../../ssh/index.ts';
import type { Db } from '../../../db/client.ts';
import { queueInstallRuns } from '../install.ts';
import type { ComputerJobDeps } from '../job-deps.ts';
import { BYOM, targetFor } from '../machines.ts';
import { INSTALL_DEADLINE_MS, transition } from '../lifecycle.ts';
import { SSH_WAIT_MS } from '../managed/settings.ts';
import { markReachable, settleProvisioning } from '../settle.ts';
import { setupScriptOf, sourceComputerOf } from '../source.ts';
import { newUuid } from '../../../lib/ids.ts';
import { messageOf, runSteps, type Step } from '../steps/runner.ts';
import { STEP } from '../steps/names.ts';
import { provisioningSteps } from '../steps/store.ts';
import { waitForSsh } from '../wait-for-ssh.ts';
import { copyWorkspace } from './copy-workspace.ts';
import { adoptHostId, prepareWorkspace, runSetupScript, SETUP_SCRIPT_TIMEOUT_MS, WORKSPACE_DIR } from './workspace.ts';

/** Each step's bound per attempt, above the limits of the commands it runs (which fail first, with their own words). */
const TIMEOUT_MS = {
  connect: 5 * 60_000,
  verify: 2 * 60_000,
  copyWorkspace: 65 * 60_000,
  clone: 25 * 60_000,
  setupScript: SETUP_SCRIPT_TIMEOUT_MS + 60_000,
};

/**
 * The set-up of a computer once it is reachable, as a list of steps for the runner: connect,
 * prepare the user's workspace, copy another computer's workspace, clone, run the template's
 * setup script, start installing dependencies. Runs as its own job, outside the computer's stack
 * lock: a pause or a teardown does not wait for it (a teardown marks its steps skipped, and the
 * runner stops at the next step it would have written). Idempotent: a resumed run skips finished
 * steps, and cloning into an existing clone fetches instead. Provisioning ends (`active` or
 * `error`) once every step has finished.
 */
export async function runComputerSetup(
  deps: ComputerJobDeps,
  computerId: string,
  ctx: Pick<JobContext, 'signal' | 'stopping' | 'log' | 'send'>,
): Promise<void> {
  const computer = await deps.db.computer.findFirst({ where: { id: computerId, deletedAt: null } });
  if (!computer) return;
  await runSteps(provisioningSteps(deps.db, computerId), setupSteps(deps, computer, ctx), {
    signal: ctx.signal,
    stopping: ctx.stopping,
    now: () => deps.clock.now(),
    provider: computer.providerType,
    warn: (msg, err) => ctx.log.warn({ err, computerId }, msg),
  });
  await settleProvisioning(deps.db, computerId, deps.clock.now());
}

function setupSteps(deps: ComputerJobDeps, computer: Computer, ctx: Pick<JobContext, 'send'>): Step[] {
  const computerId = computer.id;
  const managed = computer.providerType !== BYOM;
  let target: Promise<SshTarget> | undefined;
  const targetOf = () => (target ??= targetFor(deps, computer));
  // The user's home, from the workspace step; a resumed run whose verify completed earlier asks again.
  let home: string | undefined;
  const homeOf = async (signal: AbortSignal) => (home ??= await prepareWorkspace(deps, await targetOf(), signal));
  const directories = new Set(computer.clonedRepoDirectories);
  const saveDirectories = async (tx: Db) => {
    await tx.computer.update({ where: { id: computerId }, data: { clonedRepoDirectories: [...directories] } });
  };

  const connect: Step = managed
    ? {
        id: STEP.connect,
        timeoutMs: TIMEOUT_MS.connect,
        stopsOnFailure: 'the machine could not be reached',
        // A managed computer's sshd has only just started: wait for it to answer with the pinned host key.
        run: async ({ signal }) => waitForSsh(deps.ssh, await targetOf(), { signal, timeoutMs: SSH_WAIT_MS }),
      }
    : {
        id: STEP.connect,
        timeoutMs: TIMEOUT_MS.connect,
        stopsOnFailure: 'the machine could not be reached',
        // An agent machine is reachable once its agent dials in, usually within seconds of registering.
        retry: { ...SSH_RETRY, note: (err) => `waiting for the machine: ${messageOf(err)}` },
        run: async ({ signal }) => {
          const machineHostId = await deps.ssh.machineId(await targetOf(), { signal });
          if (!computer.hostId) await adoptHostId(deps, computer, machineHostId);
          // Reached through its tunnel: from now on a client acting on `active` reaches it too.
          return { complete: (tx) => markReachable(tx, computerId, deps.clock.now()) };
        },
      };

  const steps: Step[] = [
    connect,
    {
      id: STEP.verify,
      timeoutMs: TIMEOUT_MS.verify,
      retry: SSH_RETRY,
      stopsOnFailure: 'the workspace could not be prepared',
      run: async ({ signal }) => void (await homeOf(signal)),
    },
  ];

  const sourceComputerId = sourceComputerOf(computer.source);
  if (sourceComputerId) {
    const archive = `/tmp/agentplane-workspace-${sourceComputerId}-${computerId}.tgz`;
    let from: Computer | null = null;
    steps.push({
      id: STEP.copyWorkspace,
      timeoutMs: TIMEOUT_MS.copyWorkspace,
      run: async ({ signal }) => {
        from = await deps.db.computer.findFirst({ where: { id: sourceComputerId, deletedAt: null } });
        if (!from) throw new Error(`the source computer ${sourceComputerId} was deleted`);
        for (const d of await copyWorkspace(deps, from, { target: await targetOf(), home: await homeOf(signal) }, archive, signal)) directories.add(d);
        return { complete: saveDirectories };
      },
      // A copy cut short leaves its archive in /tmp on either machine.
      compensate: async () => {
        const rm = `rm -f ${shellQuote(archive)}`;
        const signal = AbortSignal.timeout(30_000);
        await deps.ssh.exec(await targetOf(), rm, { signal, timeoutMs: 30_000 });
        if (from) await deps.ssh.exec(await targetFor(deps, from), rm, { signal, timeoutMs: 30_000 });
      },
    });
  }

  for (const [i, url] of computer.repos.entries()) {
    steps.push({
      id: STEP.clone(i + 1),
      timeoutMs: TIMEOUT_MS.clone,
      retry: SSH_RETRY,
      run: async ({ signal }) => {
        const workspaceDir = `${await homeOf(signal)}/${WORKSPACE_DIR}`;
        const { directory } = await cloneRepo(deps.ssh, await targetOf(), { url, workspaceDir, signal });
        directories.add(directory);
        return { complete: saveDirectories };
      },
    });
  }

  const setupScript = setupScriptOf(computer.source);
  if (setupScript) {
    steps.push({
      id: STEP.setupScript,
      timeoutMs: TIMEOUT_MS.setupScript,
      retry: SSH_RETRY,
      run: async ({ signal }) => runSetupScript(deps, await targetOf(), setupScript, signal),
    });
  }

  steps.push({
    id: STEP.installDeps,
    // Handed off to the install runs, which end the step when the last of them ends.
    start: async (tx) => {
      const fresh = await tx.computer.findUniqueOrThrow({ where: { id: computerId } });
      if (fresh.clonedRepoDirectories.length === 0) return { skip: 'no repository was cloned' };
      const now = deps.clock.now();
      const installSessionId = newUuid();
      await queueInstallRuns(tx, ctx, fresh, installSessionId, now);
      // Provisioning now ends when the install does (concludeInstallSession), so its deadline moves.
      if (managed) {
        await transition(tx, computerId, { from: { operation: 'provision' }, to: { operationDeadline: new Date(now.getTime() + INSTALL_DEADLINE_MS) } });
      }
      return { handOff: { installSessionId } };
    },
  });
  return steps;
}
