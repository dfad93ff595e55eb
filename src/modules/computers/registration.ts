import ssh2 from 'ssh2';
import { BadRequest } from '../../lib/errors.ts';
import { createSshClient, describeHostKey, SshError, type PresentedHostKey } from '../../ssh/index.ts';
import type { MachineDeps } from './machines.ts';
import { organizationSshKey } from './org-ssh-key.ts';
import type { Connection } from './schemas.ts';

/** What registration learned about how to reach the machine; stored on the computer. */
export interface Reachability {
  connectionType: 'direct' | 'agent';
  sshHost?: string;
  sshPort?: number;
  hostKeyFingerprint: string;
  agentPublicKey?: string;
  relayAgentUrl?: string;
  /** The machine's own id, when the control plane could read it. */
  machineHostId?: string;
  /** Set when the control plane already connected and verified the machine. */
  connectedAt?: Date;
}

/**
 * Direct registration: SSH in with the organization's key at once, trust the host key on first
 * use (it is pinned from here on), and read the machine id. Any failure is a 400 naming the
 * host, port and cause, before anything is stored.
 */
export async function reachDirectly(
  deps: MachineDeps,
  input: { organizationId: string; remoteUser: string; host: string; port: number; now: () => Date },
): Promise<Reachability> {
  const key = await organizationSshKey(deps.db, deps.secrets, input.organizationId);
  let presented: PresentedHostKey | undefined;
  const target = {
    host: input.host,
    port: input.port,
    username: input.remoteUser,
    privateKey: key.privateKey,
    onFirstHostKey: (k: PresentedHostKey) => {
      presented = k;
    },
  };
  const signal = AbortSignal.timeout(20_000);
  // A client of its own: each registration is a trust decision of its own, never one the shared
  // pool remembers from an earlier registration of the same address.
  const probe = createSshClient();
  try {
    const machineHostId = await probe.machineId(target, { signal });
    presented ??= await probe.hostKey(target, { signal });
    return {
      connectionType: 'direct',
      sshHost: input.host,
      sshPort: input.port,
      hostKeyFingerprint: presented.fingerprint,
      machineHostId,
      connectedAt: input.now(),
    };
  } catch (err) {
    if (err instanceof SshError) throw new BadRequest(`Cannot register the machine: ${err.message}`, { metadata: { sshError: err.kind } });
    throw err;
  } finally {
    await probe.close();
  }
}

/**
 * Agent registration: the machine dials out to the relay, so nothing is reachable yet; the keys
 * it sent become the relay credential and the pinned host key. `relayAgentUrl` is the relay on
 * the API's own address.
 */
export function reachThroughAgent(relayAgentUrl: string | undefined, connection: Extract<Connection, { type: 'agent' }>): Reachability {
  if (!relayAgentUrl) {
    throw new BadRequest('This control plane process takes no agent tunnels; register the machine through a server (`agentplane serve`)');
  }
  const agentKey = parsePublicKey(connection.agentPublicKey, 'connection.agentPublicKey');
  const hostKey = parsePublicKey(connection.hostPublicKey, 'connection.hostPublicKey');
  return {
    connectionType: 'agent',
    hostKeyFingerprint: describeHostKey(hostKey).fingerprint,
    agentPublicKey: `${describeHostKey(agentKey).algorithm} ${agentKey.toString('base64')}`,
    relayAgentUrl,
  };
}

function parsePublicKey(line: string, field: string): Buffer {
  const parsed = ssh2.utils.parseKey(line);
  const key = Array.isArray(parsed) ? parsed[0] : parsed;
  if (!key || key instanceof Error || key.isPrivateKey()) {
    throw new BadRequest(`${field} must be an OpenSSH public key line, e.g. "ssh-ed25519 AAAA..."`);
  }
  return key.getPublicSSH();
}
