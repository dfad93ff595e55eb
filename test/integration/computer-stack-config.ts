import type { StackConfig } from '../../src/provisioning/pulumi/computer-stacks.ts';

/** A computer stack's `agentplane:*` configuration for the stack tests: a small computer named `name`. */
export const stackConfig = (computerId: string, name: string): StackConfig => ({
  computerId,
  name,
  organizationId: 'org_test',
  authorizedKey: 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIUSER',
  cpu: 1,
  memoryMb: 64,
  diskGb: 1,
  running: true,
});
