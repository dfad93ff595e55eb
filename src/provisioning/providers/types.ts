import type { Logger } from '../../lib/logger.ts';
import type { Input } from '@pulumi/pulumi';
import type { MetricsSample } from '../machine/metrics-parse.ts';

/**
 * The contract between the provisioner and a managed provider. A provider is a Pulumi inline
 * program for one computer, keeping the contract of every program (programs/contract.ts): the
 * provisioner runs it in that computer's own stack (stack name from the computer id) and reads
 * the outputs to reach the computer's sshd.
 *
 * Pause and resume are `pulumi up` with `running` flipped, so every change to a computer's
 * infrastructure goes through its stack; `pulumi destroy` must remove every trace.
 */

/** Requested size of one computer; defaults come from configuration. */
export interface ComputerResources {
  /** CPU limit in cores; fractions allowed (0.5 = half a core). */
  cpus: number;
  /** Memory limit in MiB. */
  memoryMiB: number;
  /** Persistent workspace size in GiB: a volume request where the provider has volumes, advisory otherwise. */
  diskGiB: number;
}

/** What the program gets for one computer. Everything is plain data, known before `pulumi up`. */
export interface ComputerProgramInput {
  /** `cmp_` + 20 lower-case base36 characters; stable and unique, also the stack name. */
  computerId: string;
  /** The computer's name: 1-63 of `[A-Za-z0-9._-]`, unique per owner only (use it for labels, not identity). */
  name: string;
  organizationId: string;
  /**
   * One OpenSSH public key line (`ssh-ed25519 AAAA...`): the computer's own credential. The
   * program installs it as the only entry of the login user's `authorized_keys`.
   */
  authorizedPublicKey: string;
  resources: ComputerResources;
  /** false = paused: processes frozen (local) or scaled to zero (kubernetes); the workspace is kept. */
  running: boolean;
}

/**
 * What the program must return (stack outputs): the contract every program keeps
 * (programs/contract.ts), `ssh` and `pausable: true`. Values may be Pulumi outputs. The host key
 * is pinned from here on: every SSH connection must present it.
 */
export interface ComputerProgramOutputs {
  ssh: {
    /** Address the control plane dials (an IP or DNS name). */
    host: Input<string>;
    port: Input<number>;
    /** The unix user agents run as; `authorizedPublicKey` logs in as this user. */
    user: Input<string>;
    /** The sshd's public host key, one OpenSSH line (`ssh-ed25519 AAAA...`). */
    hostKey: Input<string>;
  };
  /** Both built-ins stop the machine while `running` is false. */
  pausable: true;
}

/**
 * Runs inside `pulumi up`/`destroy` (an inline program): declares the computer's resources. The
 * stack runs it with the input read from the stack's `agentplane:*` configuration, the same keys a
 * YAML program reads (programs/stack-config.ts).
 */
export type ComputerProgram = (input: ComputerProgramInput) => Promise<ComputerProgramOutputs>;

/** A sample of a computer's usage read by the provider itself (local: cgroup counters), in the metrics API's units. */
export type ProviderMetricSample = Omit<MetricsSample, 'timestamp'>;

/** A managed compute provider; byom is not one of them. */
export interface ManagedProvider {
  /** The identifier clients send as `provider`, e.g. `local` or `kubernetes`. */
  readonly name: string;
  /**
   * What keeps this deployment from provisioning with it right now, each naming the missing
   * prerequisite and what provides it; empty when it is usable.
   */
  missingPrerequisites(): Promise<string[]>;
  /** The inline program for one computer's stack. */
  readonly program: ComputerProgram;
  /**
   * Optional: usage read without SSH (local: cgroup counters). Without it the control plane
   * samples the computer over SSH like a byom machine. `undefined` when the computer is paused.
   */
  sampleMetrics?(computerId: string): Promise<ProviderMetricSample | undefined>;
  /**
   * Optional: brings what an earlier version of agentplane left on this host up to date, once at
   * start when the provider is available (local: computers made before sandboxes enter theirs).
   */
  prepare?(log: Logger): Promise<void>;
}
