import type { StepStatus } from './runner.ts';

/** The ids and names of computers' provisioning steps, and the list each kind of computer starts with. */

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
    opts.connectedAt ? { id, name, status: 'completed', startedAt: opts.connectedAt, completedAt: opts.connectedAt } : { id, name, status: 'pending' };
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
