import os from 'node:os';
import type { Config } from '../../config.ts';
import type { Db } from '../../db/client.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import type { Logger } from '../../lib/logger.ts';
import { createSecretBox, loadEncryptionKey, type SecretBox } from '../../lib/secret-box.ts';
import { createSshGateway } from '../../provisioning/gateway/index.ts';
import { createSshClient, generateKeyPair } from '../../provisioning/ssh/index.ts';
import type { AgentDialer, MachineDeps } from './machines.ts';

export interface MachineAccess extends Omit<MachineDeps, 'db'> {
  close(): Promise<void>;
}

type AccessConfig = Pick<Config, 'dataDir' | 'host'> & Partial<Pick<Config, 'encryptionKey' | 'sshGateway'>>;

/**
 * The SSH side of a control-plane process: the pooled client, the secret box for stored keys,
 * and (when AGENTPLANE_SSH_GATEWAY_PORT is set) the gateway agents dial in to.
 */
export async function startMachineAccess(config: AccessConfig, db: Db, log: Logger): Promise<MachineAccess> {
  const ssh = createSshClient();
  const secrets = createSecretBox(loadEncryptionKey({ configured: config.encryptionKey, dataDir: config.dataDir }));
  if (!config.sshGateway) return { ssh, secrets, close: () => ssh.close() };

  const gateway = await createSshGateway({
    host: config.host,
    port: config.sshGateway.port,
    hostKey: await gatewayHostKey(db, secrets),
    log: log.child({ component: 'ssh-gateway' }),
    authorize: async (computerId, key) => {
      const computer = await db.computer.findFirst({
        where: { id: computerId, deletedAt: null, connectionType: 'agent' },
        select: { agentPublicKey: true },
      });
      return computer?.agentPublicKey === key.publicKey;
    },
  });
  const { port } = gateway.address();
  const dialer: AgentDialer = {
    port,
    url: `ssh://${config.sshGateway.advertisedHost ?? os.hostname()}:${port}`,
    dial: (computerId, signal) => gateway.dial(computerId, signal),
    disconnect: (computerId) => {
      gateway.disconnect(computerId);
    },
  };
  log.info({ port, url: dialer.url }, 'SSH gateway for agents is listening');
  return {
    ssh,
    secrets,
    gateway: dialer,
    close: async () => {
      await ssh.close();
      await gateway.close();
    },
  };
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
