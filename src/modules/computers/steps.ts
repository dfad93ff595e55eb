import type { Db } from '../../db/client.ts';
import { inTransaction } from '../../db/transaction.ts';
import { computerEvents } from './computer-events.ts';

export type StepStatus = 'pending' | 'running' | 'completed' | 'failed' | 'skipped';

export const STEP = {
  infrastructure: 'create-infrastructure',
  connect: 'connect',
  verify: 'verify',
  clone: (n: number) => `clone-${n}`,
  copyWorkspace: 'copy-workspace',
  setupScript: 'setup-script',
  installDeps: 'install-deps',
  teardown: 'teardown',
} as const;

export interface NewStep {
  id: string;
  name: string;
  status: StepStatus;
  startedAt?: Date;
  completedAt?: Date;
}

/**
 * A byom computer's set-up: connect and verify (already done when the control plane dialled in
 * at registration), one clone per repository, then dependencies when asked for.
 */
export function byomSteps(opts: { repos: string[]; autoInstallDeps: boolean; connectedAt?: Date }): NewStep[] {
  const done = (id: string, name: string): NewStep =>
    opts.connectedAt
      ? { id, name, status: 'completed', startedAt: opts.connectedAt, completedAt: opts.connectedAt }
      : { id, name, status: 'pending' };
  return [done(STEP.connect, 'Connecting to the machine'), done(STEP.verify, 'Verifying the machine'), ...workspaceSteps(opts)];
}

/**
 * A managed computer's provisioning: the provider's infrastructure (its Pulumi stack), its sshd
 * answering with the host key the stack reported, the user and workspace, then as for byom.
 */
export function managedSteps(opts: { repos: string[]; autoInstallDeps: boolean; setupScript: boolean; copyWorkspace: boolean }): NewStep[] {
  const pending = (id: string, name: string): NewStep => ({ id, name, status: 'pending' });
  return [
    pending(STEP.infrastructure, 'Creating computer'),
    pending(STEP.connect, 'Waiting for SSH'),
    pending(STEP.verify, 'Setting up user and workspace'),
    ...(opts.copyWorkspace ? [pending(STEP.copyWorkspace, "Copying the source computer's workspace")] : []),
    ...workspaceSteps(opts),
  ];
}

function workspaceSteps(opts: { repos: string[]; autoInstallDeps: boolean; setupScript?: boolean }): NewStep[] {
  return [
    ...opts.repos.map((url, i): NewStep => ({ id: STEP.clone(i + 1), name: `Cloning ${url}`, status: 'pending' })),
    ...(opts.setupScript ? [{ id: STEP.setupScript, name: "Running the template's setup script", status: 'pending' as const }] : []),
    ...(opts.autoInstallDeps ? [{ id: STEP.installDeps, name: 'Installing dependencies', status: 'pending' as const }] : []),
  ];
}

export async function updateStep(
  db: Db,
  computerId: string,
  stepId: string,
  patch: { status: StepStatus; error?: string | null; startedAt?: Date; completedAt?: Date | null; installSessionId?: string },
): Promise<void> {
  await inTransaction(db, async (tx) => {
    const step = await tx.provisioningStep.update({ where: { computerId_id: { computerId, id: stepId } }, data: patch });
    await computerEvents.steps(tx, [step]);
  });
}

/** Skips every step still pending, saying why; published like any step change. */
export async function skipPendingSteps(db: Db, computerId: string, reason: string): Promise<void> {
  await inTransaction(db, async (tx) => {
    const pending = await tx.provisioningStep.findMany({ where: { computerId, status: 'pending' }, orderBy: { position: 'asc' } });
    if (pending.length === 0) return;
    await tx.provisioningStep.updateMany({ where: { computerId, id: { in: pending.map((s) => s.id) } }, data: { status: 'skipped', error: reason } });
    await computerEvents.steps(tx, pending.map((s) => ({ ...s, status: 'skipped', error: reason })));
  });
}
