import type { Principal } from '../../auth/principal.ts';
import type { Db } from '../../db/client.ts';
import type { Computer } from '../../generated/prisma/client.ts';
import { ServiceUnavailable } from '../../lib/errors.ts';
import type { SecretBox } from '../../lib/secret-box.ts';
import { FORWARD_BIND_PORT, PassThroughUnsupported } from '../../relay/gateway/index.ts';
import { SshError, type SshClient, type SshTarget } from '../../ssh/index.ts';
import type { AgentDialer, PassedThrough } from '../../relay/agent-dialer.ts';
import { reachableComputer } from './access.ts';
import { organizationSshKey } from './org-ssh-key.ts';

/** The provider type of registered machines; every other provider is a managed one. */
export const BYOM = 'byom';

export type { AgentDialer };

export interface MachineDeps {
  db: Db;
  ssh: SshClient;
  secrets: SecretBox;
  gateway?: AgentDialer;
}

/**
 * How to reach a computer over SSH: a managed one directly with its own key; a byom one directly
 * with the organization's key, or through the agent's tunnel. The host key is always the one
 * pinned at registration (byom) or reported by the provider (managed).
 */
export async function targetFor(deps: MachineDeps, computer: Computer): Promise<SshTarget> {
  const common = {
    username: computer.remoteUser ?? 'root',
    privateKey: await credentialOf(deps, computer),
    hostKeyFingerprint: computer.hostKeyFingerprint ?? undefined,
  };
  if (computer.connectionType === 'agent') {
    const gateway = deps.gateway;
    if (!gateway) {
      throw new ServiceUnavailable(
        `Computer "${computer.name}" is reached through its agent's tunnel, which this process cannot route to; ` +
          'a standalone worker needs PostgreSQL (DATABASE_URL) shared with the serving replicas',
      );
    }
    return { ...common, host: `${computer.name}.agent`, port: FORWARD_BIND_PORT, dial: (signal) => gateway.dial(computer.id, signal) };
  }
  if (!computer.sshHost) {
    throw new ServiceUnavailable(
      computer.providerType === BYOM
        ? `Computer "${computer.name}" has no connection to reach it by; register the machine again`
        : `Computer "${computer.name}" is not provisioned yet`,
    );
  }
  return { ...common, host: computer.sshHost, port: computer.sshPort ?? 22 };
}

/**
 * A stream to the computer's agent for a person's own SSH connection, passed through whole: the
 * agent's server ends it, so the relay carries ciphertext it cannot read (see
 * AgentDialer.dialPerson). Undefined when the relay must bridge the person's channels itself: the
 * computer is not reached through an agent, or its agent is older than people's connections.
 */
export async function passThroughFor(deps: MachineDeps, computer: Computer, signal: AbortSignal): Promise<PassedThrough | undefined> {
  if (computer.connectionType !== 'agent' || !deps.gateway) return undefined;
  try {
    return await deps.gateway.dialPerson(computer.id, signal);
  } catch (err) {
    if (err instanceof PassThroughUnsupported) return undefined;
    throw err;
  }
}

async function credentialOf(deps: MachineDeps, computer: Computer): Promise<string> {
  if (computer.providerType === BYOM) return (await organizationSshKey(deps.db, deps.secrets, computer.organizationId)).privateKey;
  if (!computer.sshKeyCiphertext) throw new ServiceUnavailable(`Computer "${computer.name}" was deleted; its key is revoked`);
  requireRunning(computer);
  return deps.secrets.open(computer.sshKeyCiphertext);
}

/** 503 for a paused computer: what needs its machine waits for a restart (its processes are frozen). */
export function requireRunning(computer: Pick<Computer, 'id' | 'name' | 'powerState'>): void {
  if (computer.powerState === 'paused') {
    throw new ServiceUnavailable(`Computer "${computer.name}" is paused; resume it with POST /api/v0/computers/${computer.id}/restart`);
  }
}

/** `targetFor` of a computer the principal may reach (404/403 otherwise), for other modules. */
export function computerTargets(deps: MachineDeps) {
  return async (principal: Principal, computerId: string): Promise<SshTarget> => targetFor(deps, await reachableComputer(deps.db, principal, computerId));
}

/** A failure to reach the machine, as the API reports it: 503 naming the computer and the cause. */
export function machineUnavailable(computer: Pick<Computer, 'name'>, err: unknown): unknown {
  if (!(err instanceof SshError)) return err;
  return new ServiceUnavailable(`Computer "${computer.name}" cannot be reached: ${err.message}`, {
    metadata: { sshError: err.kind },
  });
}
