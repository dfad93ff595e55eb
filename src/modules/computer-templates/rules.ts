import type { Principal } from '../../auth/principal.ts';
import type { Db } from '../../db/client.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import type { ComputerTemplate } from '../../generated/prisma/client.ts';
import { BadRequest, Conflict } from '../../lib/errors.ts';
import { PUBLIC_API_SOURCE, recordAudit } from '../audit/record.ts';
import { poolConvergeJob } from '../computers/pool/job-kinds.ts';
import { assertMaySizePools } from '../computers/pool/service.ts';
import type { TemplatesDeps } from './deps.ts';
import { templateTrackJob } from './job-kinds.ts';
import type { PoolUpdate } from './schemas.ts';

/**
 * A template with a warm pool needs a provider (a program is one), and only managers and owners
 * size pools.
 */
export function checkPool(principal: Principal, input: { warmPoolSize?: number }, provider: string | null | undefined, hasProgram: boolean, size: number) {
  if (input.warmPoolSize !== undefined) assertMaySizePools(principal);
  if (size > 0 && !provider && !hasProgram) {
    throw new BadRequest("warmPoolSize needs the template's provider or program: a warm pool is provisioned ahead, on one provider");
  }
}

/** Its computers' provider is `program`: a template names a program or a provider, never both. */
export function checkProgramOrProvider(provider: string | null | undefined, hasProgram: boolean) {
  if (provider && hasProgram) {
    throw new BadRequest(
      'A template with a program has no provider: its computers run the program (provider `program`); ' +
        'send the program without a provider, or provider: null with it to replace a provider',
    );
  }
}

/** The stored columns of the pool's roll settings. */
export function poolUpdateData(p: PoolUpdate | undefined) {
  if (!p) return {};
  return p.type === 'RollingUpdate' ? { poolUpdate: p.type, poolMaxUnavailable: p.maxUnavailable } : { poolUpdate: p.type };
}

/** The pool converges once the change commits (edits of its repositories, script or program included). */
export function converge(deps: Pick<TemplatesDeps, 'queue'>, tx: Db, organizationId: string, t: ComputerTemplate, was?: ComputerTemplate) {
  return t.warmPoolSize > 0 || (was?.warmPoolSize ?? 0) > 0 ? deps.queue?.send(poolConvergeJob, { organizationId }, { tx }) : undefined;
}

/** Resolves the program's ref now (and previews a new commit), in the transaction that set it. */
export function track(deps: Pick<TemplatesDeps, 'queue'>, tx: Db, t: ComputerTemplate) {
  return t.programRepository ? deps.queue?.send(templateTrackJob, { templateId: t.id }, { tx }) : undefined;
}

export function auditTemplate(deps: Pick<TemplatesDeps, 'clock'>, tx: Db, principal: Principal, id: string, action: string, after?: ComputerTemplate) {
  return recordAudit(tx, {
    organizationId: principal.organizationId,
    eventType: 'computer_template_change',
    source: PUBLIC_API_SOURCE,
    actor: principal,
    target: { templateId: id },
    after: after
      ? {
          name: after.name,
          provider: after.provider,
          repos: after.repos,
          warmPoolSize: after.warmPoolSize,
          program: after.programRepository ? { repository: after.programRepository, path: after.programPath, ref: after.programRef } : null,
          poolUpdate: after.poolUpdate,
        }
      : null,
    payload: { action },
    at: deps.clock.now(),
  });
}

/** A write that may take a name already in use: 409 saying so. */
export async function withNameCheck<T>(name: string | undefined, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (name !== undefined && isUniqueViolation(err)) throw new Conflict(`A computer template named "${name}" already exists; choose another name`);
    throw err;
  }
}
