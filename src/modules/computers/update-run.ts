import { setTimeout as sleep } from 'node:timers/promises';
import type { Computer } from '../../generated/prisma/client.ts';
import type { JobContext } from '../../jobs/job.ts';
import type { ProgramEndpoint } from '../../provisioning/programs/index.ts';
import { issueRegistrationToken } from './dial-in.ts';
import type { ComputerJobDeps } from './job-deps.ts';
import { end, transition } from './lifecycle.ts';
import { targetFor } from './machines.ts';
import { programConfig, stackProgramOf } from './managed/program-input.ts';
import { fingerprintOfLine, registrationDeadline } from './managed/provision.ts';
import { SSH_WAIT_MS } from './managed/settings.ts';
import { READY_VERSION } from './program-template.ts';
import { waitForSsh } from './wait-for-ssh.ts';

const PROBE_TIMEOUT_MS = 10_000;
// How often a dial-in computer's update asks its agent whether it answers.
const DIAL_IN_POLL_MS = 500;
// Whatever way an update ends, the registration token it issued is spent.
const SPENT = { registrationTokenHash: null, registrationExpiresAt: null };

/**
 * The `update` stack operation (update.ts starts it): `pulumi up` of the computer's stack with the
 * new version's program, the same stack, so whatever the program keeps (a volume, a home
 * directory) is kept. Once the machine answers over SSH again the computer records the version
 * and its (maybe new) address and host key. A failure runs the old version's program again, so
 * the stack is what the computer records; the computer stays `active` if it answers then, else
 * turns `error`, and `operationError` says why the update failed. A run cut short (the control
 * plane killed) is run again by the queue (`pulumi up` is idempotent); one past its deadline is
 * dropped by the reaper, the computer staying on its old version.
 * A machine that dials in (`agent: true`) may be replaced by the new version: the computer's token
 * is issued again before `up`, and after it the update waits until the computer answers through
 * its agent's tunnel: a new agent's (it registered again with the token) or the running one's.
 */
export async function runUpdate(deps: ComputerJobDeps, computerId: string, versionId: string | undefined, ctx: JobContext): Promise<void> {
  const computer = await deps.db.computer.findFirst({ where: { id: computerId, deletedAt: null, operation: 'update' } });
  if (!computer) return;
  const version = versionId ? await deps.db.computerTemplateVersion.findFirst({ where: { id: versionId, status: READY_VERSION } }) : null;
  if (!version) {
    await transition(deps.db, computerId, { from: { operation: 'update' }, to: end('the version to update to is gone; the computer keeps its version') });
    return;
  }
  const updated = { ...computer, templateVersionId: version.id };
  try {
    const reach = await up(deps, updated, ctx);
    await transition(deps.db, computerId, {
      from: { operation: 'update', deletedAt: null },
      to: { templateVersionId: version.id, ...reach, ...SPENT, ...end(null), lastActiveAt: deps.clock.now() },
    });
    ctx.log.info({ computerId, versionId: version.id, commit: version.commit }, 'computer updated to a new version of its program');
  } catch (err) {
    if (ctx.signal.aborted) throw err;
    const why = `updating to commit ${version.commit.slice(0, 12)} failed: ${err instanceof Error ? err.message : String(err)}`;
    ctx.log.warn({ err, computerId, versionId: version.id }, 'updating the computer failed; going back to its version');
    const back = await up(deps, computer, ctx).then(
      () => '',
      (e: unknown) => `; going back to its version failed too: ${e instanceof Error ? e.message : String(e)}`,
    );
    const answers = back === '' || (await probe(deps, computer, ctx.signal));
    await transition(deps.db, computerId, {
      from: { operation: 'update', deletedAt: null },
      to: { ...end(`${why}${back}`), ...SPENT, ...(answers ? {} : { status: 'error' }) },
      ...(answers ? {} : { event: { status: 'error', detail: { error: `${why}${back}` } } }),
    });
  }
}

/**
 * `pulumi up` at the computer's version, then (when it runs) the machine answering, over SSH or
 * through its agent: the fields that reach it now. A template's program gets the computer's
 * registration token again (the same value, expiring after the template's registration timeout),
 * as the machine it runs may be a new one that must register.
 */
async function up(deps: ComputerJobDeps, computer: Computer, ctx: JobContext) {
  const running = computer.powerState !== 'paused';
  const program = await stackProgramOf(deps, computer, ctx.signal);
  const deadline = await registrationDeadline(deps, computer);
  const registrationToken = program.kind === 'yaml' ? await issueRegistrationToken(deps, computer.id, deadline, { again: true }) : undefined;
  const config = programConfig(computer, running, { registrationToken });
  const endpoint = await deps.provisioner.stacks.up(program, config, { signal: ctx.signal, log: ctx.log });
  const reach = reachOf(endpoint);
  if (running && reach.connectionType === 'direct') {
    await waitForSsh(deps.ssh, await targetFor(deps, { ...computer, ...reach }), { signal: ctx.signal, timeoutMs: SSH_WAIT_MS });
  }
  if (running && reach.connectionType === 'agent') {
    // Never past the operation's own deadline: the update says why it failed before the reaper drops it.
    const by = computer.operationDeadline && computer.operationDeadline < deadline ? computer.operationDeadline : deadline;
    await untilAgentAnswers(deps, computer.id, by, ctx.signal);
  }
  return reach;
}

/**
 * The dial-in rule after `up`: the computer answers a command through its agent's tunnel before
 * the token expires. A machine `up` replaced answers once its new agent registered again with the
 * token (which replaces the keys the tunnel is checked against); a machine `up` kept answers through
 * the agent still running (or one started again with the credential kept in its home). Either way
 * the update then spends the token. No answer by the deadline fails the update.
 */
async function untilAgentAnswers(deps: ComputerJobDeps, computerId: string, deadline: Date, signal: AbortSignal): Promise<void> {
  for (;;) {
    const now = await deps.db.computer.findUniqueOrThrow({ where: { id: computerId } });
    if (await probe(deps, { ...now, connectionType: 'agent' }, signal)) return;
    if (deps.clock.now() >= deadline) {
      throw new Error(
        `the machine did not answer through its agent by ${deadline.toISOString()}: neither did a new machine register with the ` +
          "computer's token nor did the running agent answer. A program that replaces the machine must start " +
          '"agentplane agent --url <apiUrl> --registration-token <token> --name <name>" on the new one',
      );
    }
    await sleep(DIAL_IN_POLL_MS, undefined, { signal });
  }
}

function reachOf(endpoint: ProgramEndpoint) {
  if (endpoint.kind !== 'ssh') return { connectionType: 'agent', sshHost: null, sshPort: null, programPausable: endpoint.pausable };
  return {
    connectionType: 'direct',
    sshHost: endpoint.host,
    sshPort: endpoint.port,
    remoteUser: endpoint.user,
    hostKeyFingerprint: fingerprintOfLine(endpoint.hostKey),
    programPausable: endpoint.pausable,
  };
}

async function probe(deps: ComputerJobDeps, computer: Computer, signal: AbortSignal): Promise<boolean> {
  if (computer.powerState === 'paused') return true;
  try {
    return (await deps.ssh.exec(await targetFor(deps, computer), 'true', { signal, timeoutMs: PROBE_TIMEOUT_MS })).exitCode === 0;
  } catch {
    return false;
  }
}
