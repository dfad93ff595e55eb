import type { Principal } from '../../auth/principal.ts';
import type { Db } from '../../db/client.ts';
import type { ComputerTemplate } from '../../generated/prisma/client.ts';
import { Conflict, NotFound } from '../../lib/errors.ts';
import { newWebhookSecret } from './create.ts';
import type { TemplatesDeps } from './deps.ts';
import { templateViews } from './read.ts';
import { auditTemplate, checkPool, checkProgramOrProvider, converge, poolUpdateData, track, withNameCheck } from './rules.ts';
import type { UpdateTemplateInput } from './schemas.ts';

type Program = UpdateTemplateInput['program'];

/**
 * What a program change does to the template's versions. Another ref of the same program keeps
 * them (a commit is the same program whichever ref led to it) and tracks the new ref; another
 * repository or path, or no program, starts over: its versions go, which only works while no
 * computer runs one of them (their stacks need their program to be changed or destroyed).
 */
async function programChange(tx: Db, was: ComputerTemplate, program: Program) {
  if (program === undefined) return { data: {}, moved: false };
  const same = program !== null && program.repository === was.programRepository && program.path === (was.programPath ?? '');
  if (same && program.ref === was.programRef) return { data: {}, moved: false };
  if (same) return { data: { programRef: program.ref, candidateVersionId: null, programError: null }, moved: true };
  const versions = await tx.computerTemplateVersion.findMany({ where: { templateId: was.id }, select: { id: true } });
  if (versions.length) {
    const running = await tx.computer.count({ where: { templateVersionId: { in: versions.map((v) => v.id) }, deletedAt: null } });
    if (running > 0) {
      throw new Conflict(
        `${running} computer(s) run versions of this template's program, and their stacks need it; ` +
          'delete them first, or keep the repository and path and change only the ref (or make another template)',
      );
    }
    await tx.computerTemplateVersion.deleteMany({ where: { templateId: was.id } });
  }
  return {
    data: {
      programRepository: program?.repository ?? null,
      programPath: program?.path ?? null,
      programRef: program?.ref ?? null,
      currentVersionId: null,
      candidateVersionId: null,
      programError: null,
      programCheckedAt: null,
    },
    moved: program !== null,
  };
}

/** Computers made from the template are not changed; its warm pool converges, a new program ref is tracked. */
export async function updateTemplate(deps: TemplatesDeps, principal: Principal, templateId: string, input: UpdateTemplateInput) {
  const { program, poolUpdate, ...fields } = input;
  if (program) await deps.egress.screen(program.repository);
  let webhookSecret: string | undefined;
  const updated = await withNameCheck(input.name, () =>
    deps.db.$transaction(async (tx) => {
      const was = await tx.computerTemplate.findFirst({ where: { id: templateId, organizationId: principal.organizationId, deletedAt: null } });
      if (!was) throw new NotFound(`Computer template ${templateId} not found`);
      const provider = input.provider === undefined ? was.provider : input.provider;
      const hasProgram = program === undefined ? was.programRepository !== null : program !== null;
      checkProgramOrProvider(provider, hasProgram);
      checkPool(principal, input, provider, hasProgram, input.warmPoolSize ?? was.warmPoolSize);
      const change = await programChange(tx, was, program);
      // A template made before webhooks gets its secret with its first program: shown in this answer, once.
      const webhook = hasProgram && !was.sealedWebhookSecret ? newWebhookSecret(deps) : undefined;
      webhookSecret = webhook?.secret;
      const { count } = await tx.computerTemplate.updateMany({
        where: { id: templateId, organizationId: principal.organizationId, deletedAt: null },
        data: {
          ...fields,
          ...change.data,
          ...poolUpdateData(poolUpdate),
          ...(webhook ? { sealedWebhookSecret: webhook.sealed } : {}),
          ...(input.name !== undefined ? { liveName: input.name } : {}),
          updatedAt: deps.clock.now(),
        },
      });
      if (count === 0) throw new NotFound(`Computer template ${templateId} not found`);
      const t = await tx.computerTemplate.findUniqueOrThrow({ where: { id: templateId } });
      await auditTemplate(deps, tx, principal, templateId, 'updated', t);
      if (change.moved) await track(deps, tx, t);
      await converge(deps, tx, principal.organizationId, t, was);
      return t;
    }),
  );
  const [view] = await templateViews(deps, deps.db, [updated]);
  return webhookSecret ? { ...view!, webhookSecret } : view!;
}
