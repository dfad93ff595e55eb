import path from 'node:path';
import type { PrismaClient } from './db/client.ts';
import type { EgressGuard } from './egress/guard.ts';
import type { JobDefinition, JobSchedule } from './jobs/job.ts';
import type { Clock } from './lib/clock.ts';
import type { SecretBox } from './lib/secret-box.ts';
import { analyticsJobs, analyticsSchedules } from './modules/analytics/jobs.ts';
import { computerSchedules } from './modules/computers/job-kinds.ts';
import { computerJobs } from './modules/computers/jobs.ts';
import { computerTargets, type AgentDialer } from './modules/computers/machines.ts';
import type { ManagedSettings } from './modules/computers/managed/settings.ts';
import { eventJobs, eventSchedules } from './modules/events/jobs.ts';
import { readinessJobs } from './modules/readiness/jobs.ts';
import { sessionJobs, sessionSchedules } from './modules/sessions/jobs.ts';
import { webhookJobs } from './modules/webhooks/jobs.ts';
import type { WebhookSettings } from './modules/webhooks/settings.ts';
import { DEFAULT_WIKI_JOB_SETTINGS, type WikiJobSettings } from './modules/wiki/generate/job-deps.ts';
import { wikiJobs } from './modules/wiki/jobs.ts';
import { configJobs } from './modules/config/jobs.ts';
import { automationJobs } from './modules/automations/jobs.ts';
import { configSchedules } from './modules/config/job-kinds.ts';
import { templateSchedules } from './modules/computer-templates/job-kinds.ts';
import { templateJobs } from './modules/computer-templates/jobs.ts';
import type { ReadRows } from './db/reads.ts';
import { serviceFactories } from './service-factories.ts';
import type { Provisioner } from './provisioning/provisioner.ts';
import type { SshClient } from './ssh/index.ts';
import type { TurnLimits } from './modules/sessions/turn-admission.ts';

/** What job handlers need; the process that runs the worker provides it. */
export interface JobDeps {
  prisma: PrismaClient;
  clock: Clock;
  ssh: SshClient;
  secrets: SecretBox;
  gateway?: AgentDialer;
  /** Local scratch space (readiness and wiki clones live under it). */
  dataDir: string;
  /** Managed computers' providers and stacks, and their limits. */
  provisioner: Provisioner;
  managed: ManagedSettings;
  /** Outbound requests made on a tenant's behalf. */
  egress: EgressGuard;
  /** How long stored events are kept. */
  events: { retentionMs: number };
  webhooks: WebhookSettings;
  /** Wiki generation's size bounds and deadline (configuration; defaults where a caller has none). */
  wiki?: WikiJobSettings;
  /** The database's prepared reads (services config applies through take them). */
  reads: ReadRows;
  /** How long a session's tool call waits for approval (configuration; the turn runner's default where a caller has none). */
  approvalTimeoutMs?: number;
  /** Agent turns at once in this process (configuration; the job kind's default where a caller has none). */
  turnConcurrency?: number;
  /** Running turns at once per organization and per owner (configuration). */
  turnLimits?: TurnLimits;
}

/**
 * Every background job the control plane runs, each kind bound to its handler. Modules declare
 * their kinds (`defineJobKind`) and say which function handles each; this list is the one place
 * that gathers them, for the server's in-process worker and `agentplane worker` alike.
 */
export function jobsFor(deps: JobDeps): JobDefinition[] {
  const machines = { db: deps.prisma, ssh: deps.ssh, secrets: deps.secrets, gateway: deps.gateway };
  const computers = { ssh: deps.ssh, resolveTarget: computerTargets(machines) };
  return [
    ...analyticsJobs(deps),
    ...eventJobs({ db: deps.prisma, clock: deps.clock, retentionMs: deps.events.retentionMs }),
    ...webhookJobs({ db: deps.prisma, clock: deps.clock, secrets: deps.secrets, egress: deps.egress, settings: deps.webhooks }),
    ...computerJobs({ ...machines, clock: deps.clock, provisioner: deps.provisioner, managed: deps.managed }),
    ...readinessJobs({
      prisma: deps.prisma,
      secrets: deps.secrets,
      clock: deps.clock,
      scratchRoot: path.join(deps.dataDir, 'readiness'),
      egress: deps.egress,
      computers,
    }),
    ...wikiJobs({
      prisma: deps.prisma,
      clock: deps.clock,
      scratchRoot: path.join(deps.dataDir, 'wiki'),
      egress: deps.egress,
      secrets: deps.secrets,
      computers,
      settings: deps.wiki ?? DEFAULT_WIKI_JOB_SETTINGS,
    }),
    ...automationJobs({ db: deps.prisma, clock: deps.clock, secrets: deps.secrets, egress: deps.egress }),
    ...configJobs({
      db: deps.prisma,
      clock: deps.clock,
      secrets: deps.secrets,
      egress: deps.egress,
      providers: deps.provisioner.providers,
      scratchRoot: path.join(deps.dataDir, 'config'),
      operationsFor: (ctx) =>
        serviceFactories({
          clock: deps.clock,
          queue: { send: ctx.send },
          providers: deps.provisioner.providers,
          managed: deps.managed,
          machines: { ssh: deps.ssh, secrets: deps.secrets, gateway: deps.gateway },
          reads: deps.reads,
          egress: deps.egress,
          log: ctx.log,
        }).configOperations,
    }),
    ...templateJobs({ db: deps.prisma, clock: deps.clock, programs: deps.provisioner.programs }),
    ...sessionJobs({
      db: deps.prisma,
      clock: deps.clock,
      machines: { ssh: deps.ssh, secrets: deps.secrets, gateway: deps.gateway },
      egress: deps.egress,
      approvalTimeoutMs: deps.approvalTimeoutMs,
      turnConcurrency: deps.turnConcurrency,
      turnLimits: deps.turnLimits,
    }),
  ];
}

/** Every cron schedule (UTC); registering them is an upsert, so each process that starts the queue does. */
export const JOB_SCHEDULES: readonly JobSchedule[] = [
  ...analyticsSchedules,
  ...computerSchedules,
  ...eventSchedules,
  ...sessionSchedules,
  ...configSchedules,
  ...templateSchedules,
];
