import type { Principal } from '../../auth/principal.ts';
import { Conflict } from '../../lib/errors.ts';
import { auditComputerChange } from './audit.ts';
import { reachableComputer } from './access.ts';
import type { ComputersDeps } from './deps.ts';
import { begin, transition } from './lifecycle.ts';
import { computerStackJob } from './managed/job-kinds.ts';
import type { ComputerView } from './schemas.ts';
import { templateIdOf, versionStates, viewOfComputer } from './version-view.ts';

/**
 * POST /computers/{id}/update: a program template's computer moves to its template's current
 * version. 409 when it has no update available (not a program computer, or on the current
 * version already), is not active, is a paused dial-in computer, or another operation is under way. Otherwise the `update`
 * operation starts (the stack job runs `pulumi up` with the new version's program, update-run.ts),
 * audited, and the computer answers at once (202): it records the new version once the update
 * succeeded, and `operation`/`operationError` say how it goes.
 */
export async function updateComputer(deps: ComputersDeps, principal: Principal, computerId: string): Promise<ComputerView> {
  const computer = await reachableComputer(deps.db, principal, computerId);
  const state = (await versionStates(deps.db, [computer])).get(computer.id)!;
  if (!state.updateAvailable) {
    const why = computer.templateVersionId
      ? `it runs its template's current version (${state.templateVersion?.commit.slice(0, 12)})`
      : "it is not made from a program template's version";
    throw new Conflict(`Computer "${computer.name}" has no update available: ${why}`);
  }
  if (computer.status !== 'active') throw new Conflict(`Computer "${computer.name}" is ${computer.status}; an update runs on an active computer`);
  if (computer.connectionType === 'agent' && computer.powerState === 'paused') {
    // Its update waits for the machine to answer through its agent, which a paused machine cannot.
    throw new Conflict(`Computer "${computer.name}" is paused and dials in through its agent; resume it, then update it`);
  }
  if (computer.operation !== null) {
    throw new Conflict(`Computer "${computer.name}" is busy: its ${computer.operation} is under way; update it once that ends`);
  }
  const template = await deps.db.computerTemplate.findUniqueOrThrow({ where: { id: templateIdOf(computer) } });
  const target = template.currentVersionId!;
  const now = deps.clock.now();
  const started = await deps.db.$transaction(async (tx) => {
    const begun = await transition(tx, computer.id, {
      from: { deletedAt: null, status: 'active', operation: null, templateVersionId: computer.templateVersionId },
      to: { ...begin('update', now, deps.managed), lastActiveAt: now },
    });
    if (!begun) return false;
    await deps.queue.send(computerStackJob, { computerId, operation: 'update', templateVersionId: target }, { tx });
    await auditComputerChange(tx, {
      organizationId: principal.organizationId,
      actor: principal,
      computerId,
      before: { templateVersionId: computer.templateVersionId },
      after: { templateVersionId: target },
      action: 'update_started',
      at: now,
    });
    return true;
  });
  if (!started) throw new Conflict(`Computer "${computer.name}" changed meanwhile (another operation started); try again`);
  const steps = await deps.db.provisioningStep.findMany({ where: { computerId }, orderBy: { position: 'asc' } });
  return viewOfComputer(deps.db, { ...(await deps.db.computer.findUniqueOrThrow({ where: { id: computerId } })), provisioningSteps: steps }, deps.relayUrls);
}
