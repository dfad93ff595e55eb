import type { Computer } from '../../generated/prisma/client.ts';
import type { JobContext } from '../../jobs/job.ts';
import type { ProgramEndpoint } from '../../provisioning/programs/index.ts';
import type { ComputerJobDeps } from './job-deps.ts';
import { end, transition } from './lifecycle.ts';
import { targetFor } from './machines.ts';
import { programConfig, stackProgramOf } from './managed/program-input.ts';
import { fingerprintOfLine } from './managed/provision.ts';
import { SSH_WAIT_MS } from './managed/settings.ts';
import { READY_VERSION } from './program-template.ts';
import { waitForSsh } from './wait-for-ssh.ts';

const PROBE_TIMEOUT_MS = 10_000;

/**
 * The `update` stack operation (update.ts starts it): `pulumi up` of the computer's stack with the
 * new version's program, the same stack, so whatever the program keeps (a volume, a home
 * directory) is kept. Once the machine answers over SSH again the computer records the version
 * and its (maybe new) address and host key. A failure runs the old version's program again, so
 * the stack is what the computer records; the computer stays `active` if it answers then, else
 * turns `error`, and `operationError` says why the update failed. A run cut short (the control
 * plane killed) is run again by the queue (`pulumi up` is idempotent); one past its deadline is
 * dropped by the reaper, the computer staying on its old version.
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
      to: { templateVersionId: version.id, ...reach, ...end(null), lastActiveAt: deps.clock.now() },
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
      to: { ...end(`${why}${back}`), ...(answers ? {} : { status: 'error' }) },
      ...(answers ? {} : { event: { status: 'error', detail: { error: `${why}${back}` } } }),
    });
  }
}

/** `pulumi up` at the computer's version, then (when it runs) SSH answering: the fields that reach it now. */
async function up(deps: ComputerJobDeps, computer: Computer, ctx: JobContext) {
  const running = computer.powerState !== 'paused';
  const program = await stackProgramOf(deps, computer, ctx.signal);
  const endpoint = await deps.provisioner.stacks.up(program, programConfig(computer, running), { signal: ctx.signal, log: ctx.log });
  const reach = reachOf(endpoint);
  if (running && reach.connectionType === 'direct') {
    await waitForSsh(deps.ssh, await targetFor(deps, { ...computer, ...reach }), { signal: ctx.signal, timeoutMs: SSH_WAIT_MS });
  }
  return reach;
}

function reachOf(endpoint: ProgramEndpoint) {
  if (endpoint.kind !== 'ssh') return { programPausable: endpoint.pausable };
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
