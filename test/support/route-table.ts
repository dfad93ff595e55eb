import { compose } from '../../src/compose.ts';
import { loadConfig } from '../../src/config.ts';
import type { Database } from '../../src/db/client.ts';
import { createLogger } from '../../src/lib/logger.ts';
import { createSecretBox } from '../../src/lib/secret-box.ts';
import { createSshClient } from '../../src/provisioning/ssh/index.ts';

const noDatabase = () => Promise.reject(new Error('the route table reads no database'));

/**
 * The app and its route table, built by the composition root; building them touches no database,
 * so none is given, and nothing is started.
 */
export function appWithoutDatabase() {
  const ssh = createSshClient();
  return compose({
    config: loadConfig({}),
    db: { kind: 'postgres', url: '', prisma: {}, reads: noDatabase, authEpoch: noDatabase, listen: noDatabase, close: async () => {} } as unknown as Database,
    log: createLogger({ level: 'silent' }),
    overrides: {
      machines: { ssh, secrets: createSecretBox(Buffer.alloc(32)), close: () => ssh.close() },
      queue: { send: async () => '' },
      pendingMigrations: async () => [],
    },
  });
}
