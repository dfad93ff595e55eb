import type { Principal } from '../../auth/principal.ts';
import type { Db, PrismaClient } from '../../db/client.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import type { ComputerTemplate } from '../../generated/prisma/client.ts';
import type { Clock } from '../../lib/clock.ts';
import { Conflict, NotFound } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import { PUBLIC_API_SOURCE, recordAudit } from '../audit/record.ts';
import type { CreateTemplateInput, UpdateTemplateInput } from './schemas.ts';
import { templateView } from './views.ts';

export interface TemplatesDeps {
  db: PrismaClient;
  clock: Clock;
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
export function createTemplatesService({ db, clock }: TemplatesDeps) {
  const audit = (tx: Db, principal: Principal, id: string, action: string, after?: ComputerTemplate) =>
    recordAudit(tx, {
      organizationId: principal.organizationId,
      eventType: EVENT,
      source: PUBLIC_API_SOURCE,
      actor: principal,
      target: { templateId: id },
      after: after ? { name: after.name, provider: after.provider, repos: after.repos } : null,
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
              createdBy: principal.kind === 'user' ? principal.userId : principal.serviceAccountId,
              createdAt: now,
              updatedAt: now,
            },
          });
          await audit(tx, principal, t.id, 'created', t);
          return t;
        }),
      );
      return templateView(created);
    },

    async update(principal: Principal, templateId: string, input: UpdateTemplateInput) {
      const updated = await write(input.name, () =>
        db.$transaction(async (tx) => {
          const { count } = await tx.computerTemplate.updateMany({
            where: { id: templateId, organizationId: principal.organizationId, deletedAt: null },
            data: { ...input, ...(input.name !== undefined ? { liveName: input.name } : {}), updatedAt: clock.now() },
          });
          if (count === 0) throw new NotFound(`Computer template ${templateId} not found`);
          const t = await tx.computerTemplate.findUniqueOrThrow({ where: { id: templateId } });
          await audit(tx, principal, templateId, 'updated', t);
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
      });
    },
  };
}
export type TemplatesService = ReturnType<typeof createTemplatesService>;
