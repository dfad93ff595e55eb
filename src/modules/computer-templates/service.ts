import type { Principal } from '../../auth/principal.ts';
import type { Db, PrismaClient } from '../../db/client.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import type { ComputerTemplate } from '../../generated/prisma/client.ts';
import type { Clock } from '../../lib/clock.ts';
import { BadRequest, Conflict, NotFound } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import { PUBLIC_API_SOURCE, recordAudit } from '../audit/record.ts';
import type { JobQueue } from '../../jobs/queue.ts';
import { poolConvergeJob } from '../computers/pool/job-kinds.ts';
import { assertMaySizePools } from '../computers/pool/service.ts';
import type { CreateTemplateInput, UpdateTemplateInput } from './schemas.ts';
import { templateView } from './views.ts';

export interface TemplatesDeps {
  db: PrismaClient;
  clock: Clock;
  /** Sends the warm pools' convergence when a template's pool changes (else the next minute's run does it). */
  queue?: Pick<JobQueue, 'send'>;
}

const EVENT = 'computer_template_change';

const nameTaken = (name: string) => new Conflict(`A computer template named "${name}" already exists; choose another name`);

/** A live template of the organization; 404 otherwise (another organization's included). */
export async function liveTemplate(db: Db, organizationId: string, templateId: string): Promise<ComputerTemplate> {
  const template = await db.computerTemplate.findFirst({ where: { id: templateId, organizationId, deletedAt: null } });
  if (!template) throw new NotFound(`Computer template ${templateId} not found`);
  return template;
}

/** Computer templates: per-organization recipes for managed computers (agentplane extension). */
export function createTemplatesService({ db, clock, queue }: TemplatesDeps) {
  /**
   * A template with a warm pool needs a provider, and only managers and owners size pools; the
   * pool converges once the change commits (edits of its repositories or script included).
   */
  function checkPool(principal: Principal, input: { warmPoolSize?: number }, provider: string | null | undefined, size: number) {
    if (input.warmPoolSize !== undefined) assertMaySizePools(principal);
    if (size > 0 && !provider) throw new BadRequest("warmPoolSize needs the template's provider: a warm pool is provisioned ahead, on one provider");
  }
  const converge = (tx: Db, principal: Principal, t: ComputerTemplate, was?: ComputerTemplate) =>
    t.warmPoolSize > 0 || (was?.warmPoolSize ?? 0) > 0 ? queue?.send(poolConvergeJob, { organizationId: principal.organizationId }, { tx }) : undefined;

  const audit = (tx: Db, principal: Principal, id: string, action: string, after?: ComputerTemplate) =>
    recordAudit(tx, {
      organizationId: principal.organizationId,
      eventType: EVENT,
      source: PUBLIC_API_SOURCE,
      actor: principal,
      target: { templateId: id },
      after: after ? { name: after.name, provider: after.provider, repos: after.repos, warmPoolSize: after.warmPoolSize } : null,
      payload: { action },
      at: clock.now(),
    });

  async function write<T>(name: string | undefined, work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (err) {
      if (name !== undefined && isUniqueViolation(err)) throw nameTaken(name);
      throw err;
    }
  }

  return {
    async list(principal: Principal) {
      const rows = await db.computerTemplate.findMany({
        where: { organizationId: principal.organizationId, deletedAt: null },
        orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
      });
      return rows.map(templateView);
    },

    async get(principal: Principal, templateId: string) {
      return templateView(await liveTemplate(db, principal.organizationId, templateId));
    },

    async create(principal: Principal, input: CreateTemplateInput) {
      checkPool(principal, input, input.provider, input.warmPoolSize ?? 0);
      const now = clock.now();
      const created = await write(input.name, () =>
        db.$transaction(async (tx) => {
          const t = await tx.computerTemplate.create({
            data: {
              id: newId('tpl'),
              organizationId: principal.organizationId,
              name: input.name,
              liveName: input.name,
              provider: input.provider,
              repos: input.repos ?? [],
              autoInstallDeps: input.autoInstallDeps ?? false,
              setupScript: input.setupScript,
              warmPoolSize: input.warmPoolSize ?? 0,
              createdBy: principal.kind === 'user' ? principal.userId : principal.serviceAccountId,
              createdAt: now,
              updatedAt: now,
            },
          });
          await audit(tx, principal, t.id, 'created', t);
          await converge(tx, principal, t);
          return t;
        }),
      );
      return templateView(created);
    },

    async update(principal: Principal, templateId: string, input: UpdateTemplateInput) {
      const updated = await write(input.name, () =>
        db.$transaction(async (tx) => {
          const was = await tx.computerTemplate.findFirst({ where: { id: templateId, organizationId: principal.organizationId, deletedAt: null } });
          if (!was) throw new NotFound(`Computer template ${templateId} not found`);
          checkPool(principal, input, input.provider === undefined ? was.provider : input.provider, input.warmPoolSize ?? was.warmPoolSize);
          const { count } = await tx.computerTemplate.updateMany({
            where: { id: templateId, organizationId: principal.organizationId, deletedAt: null },
            data: { ...input, ...(input.name !== undefined ? { liveName: input.name } : {}), updatedAt: clock.now() },
          });
          if (count === 0) throw new NotFound(`Computer template ${templateId} not found`);
          const t = await tx.computerTemplate.findUniqueOrThrow({ where: { id: templateId } });
          await audit(tx, principal, templateId, 'updated', t);
          await converge(tx, principal, t, was);
          return t;
        }),
      );
      return templateView(updated);
    },

    /** Computers made from the template keep what they were made with. */
    async remove(principal: Principal, templateId: string) {
      await db.$transaction(async (tx) => {
        const now = clock.now();
        const { count } = await tx.computerTemplate.updateMany({
          where: { id: templateId, organizationId: principal.organizationId, deletedAt: null },
          data: { deletedAt: now, liveName: null, updatedAt: now },
        });
        if (count === 0) throw new NotFound(`Computer template ${templateId} not found`);
        await audit(tx, principal, templateId, 'deleted');
        await queue?.send(poolConvergeJob, { organizationId: principal.organizationId }, { tx });
      });
    },
  };
}
export type TemplatesService = ReturnType<typeof createTemplatesService>;
