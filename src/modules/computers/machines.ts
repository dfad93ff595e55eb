import type { Duplex } from 'node:stream';
import type { Principal } from '../../auth/principal.ts';
import type { Db } from '../../db/client.ts';
import type { Computer } from '../../generated/prisma/client.ts';
import { ServiceUnavailable } from '../../lib/errors.ts';
import type { SecretBox } from '../../lib/secret-box.ts';
import { SshError, type SshClient, type SshTarget } from '../../provisioning/ssh/index.ts';
import { reachableComputer } from './access.ts';
import { organizationSshKey } from './org-ssh-key.ts';

/** The SSH gateway as the computers module sees it: a way to open a stream to an agent's machine. */
export interface AgentDialer {
  readonly port: number;
  /** `ssh://host:port`, the address agents keep their tunnel to. */
  readonly url: string;
  dial(computerId: string, signal: AbortSignal): Promise<Duplex>;
  /** Drops the agent's tunnel, e.g. when its computer is deleted. */
  disconnect(computerId: string): void;
}

export interface MachineDeps {
  db: Db;
  ssh: SshClient;
  secrets: SecretBox;
  gateway?: AgentDialer;
}

/**
 * How to reach a registered computer over SSH: directly with the organization's key, or through
 * the agent's tunnel; the host key is always the one pinned at registration.
 */
export async function targetFor(deps: MachineDeps, computer: Computer): Promise<SshTarget> {
  const key = await organizationSshKey(deps.db, deps.secrets, computer.organizationId);
  const common = {
    username: computer.remoteUser ?? 'root',
    privateKey: key.privateKey,
    hostKeyFingerprint: computer.hostKeyFingerprint ?? undefined,
  };
  if (computer.connectionType === 'agent') {
    const gateway = deps.gateway;
    if (!gateway) {
      throw new ServiceUnavailable(
        `Computer "${computer.name}" is reached through the SSH gateway, which is not enabled on this server (AGENTPLANE_SSH_GATEWAY_PORT)`,
      );
    }
    return { ...common, host: `${computer.name}.agent`, port: gateway.port, dial: (signal) => gateway.dial(computer.id, signal) };
  }
  if (!computer.sshHost) {
    throw new ServiceUnavailable(`Computer "${computer.name}" has no connection to reach it by; register the machine again`);
  }
  return { ...common, host: computer.sshHost, port: computer.sshPort ?? 22 };
}

/** `targetFor` of a computer the principal may reach (404/403 otherwise), for other modules. */
export function computerTargets(deps: MachineDeps) {
  return async (principal: Principal, computerId: string): Promise<SshTarget> =>
    targetFor(deps, await reachableComputer(deps.db, principal, computerId));
}

/** A failure to reach the machine, as the API reports it: 503 naming the computer and the cause. */
export function machineUnavailable(computer: Pick<Computer, 'name'>, err: unknown): unknown {
  if (!(err instanceof SshError)) return err;
  return new ServiceUnavailable(`Computer "${computer.name}" cannot be reached: ${err.message}`, {
    metadata: { sshError: err.kind },
  });
}
