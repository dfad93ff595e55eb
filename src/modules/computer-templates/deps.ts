import type { Db, PrismaClient } from '../../db/client.ts';
import type { EgressGuard } from '../../egress/guard.ts';
import type { ComputerTemplate } from '../../generated/prisma/client.ts';
import type { JobQueue } from '../../jobs/queue.ts';
import type { Clock } from '../../lib/clock.ts';
import { NotFound } from '../../lib/errors.ts';
import type { SecretBox } from '../../lib/secret-box.ts';

export interface TemplatesDeps {
  db: PrismaClient;
  clock: Clock;
  /** Seals the push webhook's secret. */
  secrets: Pick<SecretBox, 'seal' | 'open'>;
  /** A program's repository is a tenant URL: screened when it is set, checked again at every clone. */
  egress: Pick<EgressGuard, 'screen'>;
  /** Sends the program's tracking and the warm pools' convergence when a template changes (else the next minute's runs do). */
  queue?: Pick<JobQueue, 'send'>;
  /** The API's public base URL, for templates' webhook URLs (undefined: the path alone). */
  publicUrl?: () => string | undefined;
}

/** A live template of the organization; 404 otherwise (another organization's included). */
export async function liveTemplate(db: Db, organizationId: string, templateId: string): Promise<ComputerTemplate> {
  const template = await db.computerTemplate.findFirst({ where: { id: templateId, organizationId, deletedAt: null } });
  if (!template) throw new NotFound(`Computer template ${templateId} not found`);
  return template;
}
