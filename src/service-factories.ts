import type { PrismaClient } from './db/client.ts';
import type { ReadRows } from './db/reads.ts';
import type { EgressGuard } from './egress/guard.ts';
import type { JobQueue } from './jobs/queue.ts';
import type { Clock } from './lib/clock.ts';
import type { Logger } from './lib/logger.ts';
import { automationDeclarations } from './modules/automations/declare.ts';
import { createTemplatesService } from './modules/computer-templates/service.ts';
import type { MachineDeps } from './modules/computers/machines.ts';
import type { ManagedSettings } from './modules/computers/managed/settings.ts';
import { createComputersService } from './modules/computers/service.ts';
import type { Operations } from './modules/config/kinds/types.ts';
import { createIntegrationsService } from './modules/integrations/service.ts';
import { createOrganizationService } from './modules/organization/service.ts';
import { createServiceAccountsService } from './modules/service-accounts/service.ts';
import { createWebhooksService } from './modules/webhooks/service.ts';
import type { ProviderRegistry } from './provisioning/providers/registry.ts';
import { publicBaseUrl, type RelayUrls } from './relay/urls.ts';
import type { TurnLimits } from './modules/sessions/turn-admission.ts';

export interface ServiceFactoryDeps {
  clock: Clock;
  queue: Pick<JobQueue, 'send'>;
  providers: ProviderRegistry;
  managed: ManagedSettings;
  relayUrls?: RelayUrls;
  machines: Omit<MachineDeps, 'db'>;
  reads: ReadRows;
  egress: EgressGuard;
  log: Logger;
  /** Running-turn limits, shown to managers. */
  turnLimits?: TurnLimits;
}

/**
 * The modules' services built on a given client: the app's own for its routes, or a config
 * apply's transaction (joined-transaction.ts), in the API and in the reconcile job alike.
 */
export function serviceFactories(deps: ServiceFactoryDeps) {
  const { clock, queue, egress } = deps;
  const secrets = deps.machines.secrets;
  const f = {
    computers: (db: PrismaClient) =>
      createComputersService({ ...deps.machines, db, clock, providers: deps.providers, queue, managed: deps.managed, relayUrls: deps.relayUrls }),
    serviceAccounts: (db: PrismaClient) =>
      createServiceAccountsService({
        db,
        clock,
        reads: deps.reads,
        computers: { queue, managed: deps.managed },
        machines: deps.machines,
        log: deps.log,
      }),
    templates: (db: PrismaClient) => createTemplatesService({ db, clock, queue, secrets, egress, publicUrl: () => publicBaseUrl(deps.relayUrls) }),
    organization: (db: PrismaClient) => createOrganizationService({ db, clock, secrets, egress, turnLimits: deps.turnLimits }),
    integrations: (db: PrismaClient) => createIntegrationsService({ db, clock, secrets, egress }),
    webhooks: (db: PrismaClient) => createWebhooksService({ db, clock, secrets, egress }),
    automations: (db: PrismaClient) => automationDeclarations({ db, clock, queue }),
  };
  return {
    ...f,
    /** What config applies through (src/modules/config). */
    configOperations: (db: PrismaClient): Operations => ({
      templates: f.templates(db),
      pools: f.computers(db),
      serviceAccounts: f.serviceAccounts(db),
      organization: f.organization(db),
      integrations: f.integrations(db),
      webhooks: f.webhooks(db),
      automations: f.automations(db),
    }),
  };
}
