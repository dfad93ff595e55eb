import type { Config } from '../../config.ts';
import type { Db } from '../../db/client.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import type { Logger } from '../../lib/logger.ts';
import { createSecretBox, loadEncryptionKey, type SecretBox } from '../../lib/secret-box.ts';
import type { AgentIdentity } from '../../relay/gateway/index.ts';
import { createSshClient, generateKeyPair } from '../../ssh/index.ts';
import { createAgentDialer } from '../../relay/agent-dialer.ts';
import { peerTokens } from '../../relay/peer-auth.ts';
import { startReplicaRelay, type ReplicaRelay } from '../../relay/replica-relay.ts';
import type { MachineDeps } from './machines.ts';

export interface MachineAccess extends Omit<MachineDeps, 'db'> {
  /** The agent side of the relay, in a process that serves the API; absent in a standalone worker. */
  relay?: ReplicaRelay & { hostKey: string };
  close(): Promise<void>;
}

type AccessConfig = Pick<Config, 'dataDir' | 'host'> &
  Partial<Pick<Config, 'encryptionKey' | 'sshGateway' | 'sshKeepaliveMs'>> & {
    relay?: { peer?: { port: number; advertisedHost: string; leaseMs?: number; renewMs?: number } };
    /** Whether this process takes agents' tunnels (`serve`) or only reaches them through the replicas that do (`worker`). */
    holdsTunnels?: boolean;
  };

/**
 * The SSH side of a control-plane process: the pooled client, the secret box for stored keys,
 * and the way to agents' machines — the relay's gateway in a serving replica, through which
 * agents connect (WebSocket on the API port, or AGENTPLANE_SSH_GATEWAY_PORT), and with several
 * replicas the routes to tunnels other replicas hold.
 */
export async function startMachineAccess(config: AccessConfig, db: Db, log: Logger): Promise<MachineAccess> {
  const ssh = createSshClient({ keepaliveIntervalMs: config.sshKeepaliveMs });
  const secrets = createSecretBox(loadEncryptionKey({ configured: config.encryptionKey, dataDir: config.dataDir }));
  const peer = config.relay?.peer;
  const tokens = peerTokens(secrets.derive('relay peer'));
  if (!config.holdsTunnels) {
    const gateway = peer ? createAgentDialer({ peers: { db, tokens } }) : undefined;
    return { ssh, secrets, gateway, close: () => ssh.close() };
  }

  const hostKey = await gatewayHostKey(db, secrets);
  const relay = await startReplicaRelay({
    db,
    log: log.child({ component: 'relay' }),
    host: config.host,
    hostKey,
    sshGatewayPort: config.sshGateway?.port,
    peer: peer && { ...peer, tokens },
    authorize: async (computerId, key) => (await agentKeysMatching(db, [{ computerId, key }])).has(computerId),
    stillAuthorized: (agents) => agentKeysMatching(db, agents),
  });
  return {
    ssh,
    secrets,
    gateway: relay.dialer,
    relay: { ...relay, hostKey },
    close: async () => {
      await ssh.close();
      await relay.close();
    },
  };
}

/**
 * The computers whose registered agent key is the one their agent presented (one query for all):
 * those reached through their agent, and those still provisioning, whose agent may register and
 * dial in before their stack is up (its completion makes them `agent` computers).
 */
async function agentKeysMatching(db: Db, agents: AgentIdentity[]): Promise<Set<string>> {
  const computers = await db.computer.findMany({
    where: { id: { in: agents.map((a) => a.computerId) }, deletedAt: null, OR: [{ connectionType: 'agent' }, { operation: 'provision' }] },
    select: { id: true, agentPublicKey: true },
  });
  const registered = new Map(computers.map((c) => [c.id, c.agentPublicKey]));
  return new Set(agents.filter((a) => registered.get(a.computerId) === a.key.publicKey).map((a) => a.computerId));
}

/**
 * Agents pin the gateway's host key, so it must survive restarts and be the same on every
 * replica: stored (encrypted) in the shared database, created by whichever process needs it first.
 */
async function gatewayHostKey(db: Db, secrets: SecretBox): Promise<string> {
  const name = 'ssh-gateway-host-key';
  const stored = await db.controlPlaneSecret.findUnique({ where: { name } });
  if (stored) return secrets.open(stored.ciphertext);
  try {
    const key = generateKeyPair('agentplane-gateway').privateKey;
    await db.controlPlaneSecret.create({ data: { name, ciphertext: secrets.seal(key) } });
    return key;
  } catch (err) {
    if (!isUniqueViolation(err)) throw err;
    return gatewayHostKey(db, secrets);
  }
}
