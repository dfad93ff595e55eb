import type { Config } from '../../config.ts';
import type { Db } from '../../db/client.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import type { Logger } from '../../lib/logger.ts';
import { createSecretBox, loadEncryptionKey, type SecretBox } from '../../lib/secret-box.ts';
import type { PresentedAgentKey } from '../../relay/gateway/index.ts';
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
    authorize: (computerId, key) => agentKeyMatches(db, computerId, key),
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

async function agentKeyMatches(db: Db, computerId: string, key: PresentedAgentKey): Promise<boolean> {
  const computer = await db.computer.findFirst({
    where: { id: computerId, deletedAt: null, connectionType: 'agent' },
    select: { agentPublicKey: true },
  });
  return computer?.agentPublicKey === key.publicKey;
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
