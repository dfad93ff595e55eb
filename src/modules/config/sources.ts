import type { Principal } from '../../auth/principal.ts';
import type { ConfigSource } from '../../generated/prisma/client.ts';
import { BadRequest, NotFound } from '../../lib/errors.ts';
import { newId, secretBytes } from '../../lib/ids.ts';
import { PUBLIC_API_SOURCE, recordAudit } from '../audit/record.ts';
import type { ConfigDeps } from './deps.ts';
import { configReconcileJob } from './job-kinds.ts';
import type { CreateSourceBody, Drift, SourceView } from './schemas.ts';

const webhookPath = (id: string) => `/api/v0/config/sources/${id}/webhook`;

function sourceView(s: ConfigSource, publicUrl: string | undefined): SourceView {
  const result = s.lastResult as SourceView['status']['lastResult'];
  return {
    id: s.id,
    repository: s.repository,
    branch: s.branch,
    path: s.path,
    intervalSeconds: s.intervalSeconds,
    prune: s.prune,
    drift: s.drift === 'fix' ? 'fix' : 'warn',
    integrationId: s.integrationId,
    webhookUrl: `${publicUrl ?? ''}${webhookPath(s.id)}`,
    status: {
      lastAppliedCommit: s.lastAppliedCommit,
      lastCommit: s.lastCommit,
      lastAttemptAt: s.lastAttemptAt?.getTime() ?? null,
      lastResult: result ?? null,
      drift: s.driftFound as Drift[],
    },
    createdAt: s.createdAt.getTime(),
  };
}

/**
 * Git repositories the organization's configuration is reconciled from. A source acts with the
 * role of the person who defined it (re-read at every reconcile), so it can do no more than they can.
 */
export function sourceOperations(deps: Pick<ConfigDeps, 'db' | 'clock' | 'secrets' | 'queue' | 'publicUrl'>) {
  const { db, clock } = deps;
  const find = async (principal: Principal, id: string) => {
    const row = await db.configSource.findFirst({ where: { id, organizationId: principal.organizationId } });
    if (!row) throw new NotFound(`Config source ${id} not found`);
    return row;
  };
  const view = (s: ConfigSource) => sourceView(s, deps.publicUrl());
  const audit = (principal: Principal, s: ConfigSource, action: string) => ({
    organizationId: principal.organizationId,
    eventType: 'config_source_change',
    source: PUBLIC_API_SOURCE,
    actor: principal,
    target: { sourceId: s.id },
    after: { repository: s.repository, branch: s.branch, path: s.path, prune: s.prune, drift: s.drift },
    payload: { action },
    at: clock.now(),
  });

  return {
    async create(principal: Principal, body: CreateSourceBody) {
      if (principal.kind !== 'user')
        throw new BadRequest('A config source acts with the role of the person who defines it; define it with a personal credential');
      if (body.integrationId) {
        const integration = await db.sourceControlIntegration.findFirst({ where: { id: body.integrationId, organizationId: principal.organizationId } });
        if (!integration) throw new BadRequest(`integrationId ${body.integrationId}: no source-control integration with this id in the organization`);
      }
      const webhookSecret = secretBytes(24).toString('base64url');
      const now = clock.now();
      const row = await db.$transaction(async (tx) => {
        const created = await tx.configSource.create({
          data: {
            id: newId('cfsrc'),
            organizationId: principal.organizationId,
            repository: body.repository,
            branch: body.branch,
            path: body.path.replace(/^\.?\/*|\/+$/g, ''),
            intervalSeconds: body.intervalSeconds,
            prune: body.prune,
            drift: body.drift,
            integrationId: body.integrationId ?? null,
            sealedWebhookSecret: deps.secrets.seal(webhookSecret),
            createdBy: principal.userId,
            createdByKind: 'user',
            createdAt: now,
            updatedAt: now,
          },
        });
        await recordAudit(tx, audit(principal, created, 'created'));
        // The first reconcile at once, then on the interval.
        await deps.queue.send(configReconcileJob, { sourceId: created.id }, { tx });
        return created;
      });
      return { ...view(row), webhookSecret };
    },

    async list(principal: Principal) {
      const rows = await db.configSource.findMany({ where: { organizationId: principal.organizationId }, orderBy: [{ createdAt: 'asc' }, { id: 'asc' }] });
      return { sources: rows.map(view) };
    },

    get: async (principal: Principal, id: string) => view(await find(principal, id)),

    /** Objects the source manages stay as they are, no longer managed. */
    async remove(principal: Principal, id: string) {
      const row = await find(principal, id);
      await db.$transaction(async (tx) => {
        await tx.configSource.delete({ where: { id: row.id } });
        await tx.configResource.deleteMany({ where: { organizationId: row.organizationId, managedBy: row.id } });
        await recordAudit(tx, audit(principal, row, 'deleted'));
      });
    },

    /** A reconcile now, as a push would start. */
    async reconcile(principal: Principal, id: string) {
      const row = await find(principal, id);
      await deps.queue.send(configReconcileJob, { sourceId: row.id });
      return view(row);
    },
  };
}
