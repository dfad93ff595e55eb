import { createApp } from '../../src/app.ts';
import { createEventHub } from '../../src/modules/events/hub.ts';
import { createEgressGuard } from '../../src/egress/guard.ts';
import { parseEgressAllow } from '../../src/egress/policy.ts';
import { loadConfig } from '../../src/config.ts';
import type { PrismaClient } from '../../src/db/client.ts';
import { systemClock } from '../../src/lib/clock.ts';
import { createLogger } from '../../src/lib/logger.ts';
import { createSecretBox } from '../../src/lib/secret-box.ts';
import { createSshClient } from '../../src/ssh/index.ts';
import { createProviderRegistry } from '../../src/provisioning/providers/registry.ts';

/** The app and its route table; building them touches no database, so none is given. */
export function appWithoutDatabase() {
  return createApp({
    config: loadConfig({}),
    prisma: {} as PrismaClient,
    reads: () => Promise.reject(new Error('the route table reads no database')),
    authEpoch: () => Promise.reject(new Error('the route table reads no database')),
    log: createLogger({ level: 'silent' }),
    clock: systemClock,
    providers: createProviderRegistry([]),
    queue: { send: async () => '' },
    machines: { ssh: createSshClient(), secrets: createSecretBox(Buffer.alloc(32)) },
    pendingMigrations: async () => [],
    egress: createEgressGuard(parseEgressAllow(undefined)),
    eventHub: createEventHub({ db: {} as PrismaClient, listen: () => Promise.reject(new Error('the route table listens to no database')), log: createLogger({ level: 'silent' }) }),
  });
}
