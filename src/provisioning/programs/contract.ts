/**
 * Environments as code: the contract between agentplane and a computer's Pulumi program. Both
 * kinds of program keep it: a template's Pulumi YAML program in a repository, and the built-in
 * providers' inline programs (`local`, `kubernetes`). One path from request to stack: a provider
 * is a program.
 *
 * In: the stack's configuration, namespace `agentplane` (a YAML program reads
 * `${agentplane:computerId}` without declaring it). Out: the stack's outputs, `ssh` for a machine
 * the control plane dials, or `agent: true` for one that dials in through the relay.
 */

/** Where a template's program lives: a directory of a repository at a branch, tag or commit. */
export interface ProgramSource {
  repository: string;
  /** Directory holding `Pulumi.yaml`, relative to the repository root ('' = the root). */
  path: string;
  ref: string;
}

/** The stack configuration agentplane sets, as `agentplane:<key>` (all strings on the wire). */
export interface ProgramConfig {
  computerId: string;
  name: string;
  organizationId: string;
  /** One OpenSSH public key line: the only key the machine's login user accepts. */
  authorizedKey: string;
  cpu: number;
  memoryMb: number;
  diskGb: number;
  /** The control plane's base URL, for machines that dial in. */
  apiUrl: string;
  /** false while the computer is paused; programs that can pause read it. */
  running: boolean;
  /** Dial-in machines only: registers exactly this computer, once, until it expires (secret). */
  registrationToken?: string;
}

/** What a computer's stack outputs say about reaching it. */
export type ProgramEndpoint =
  | { kind: 'ssh'; host: string; port: number; user: string; hostKey: string; pausable: boolean }
  | { kind: 'agent'; pausable: boolean };

/** One object a preview would create. */
export interface PreviewedObject {
  type: string;
  name: string;
}
