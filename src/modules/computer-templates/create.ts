import type { Principal } from '../../auth/principal.ts';
import { newId, secretBytes } from '../../lib/ids.ts';
import type { TemplatesDeps } from './deps.ts';
import { templateViews } from './read.ts';
import { auditTemplate, checkPool, checkProgramOrProvider, converge, poolUpdateData, track, withNameCheck } from './rules.ts';
import type { CreateTemplateInput } from './schemas.ts';

/** A new push webhook secret: sealed in the row, shown to the caller once. */
export function newWebhookSecret(deps: Pick<TemplatesDeps, 'secrets'>) {
  const secret = secretBytes(24).toString('base64url');
  return { secret, sealed: deps.secrets.seal(secret) };
}

/**
 * A new template. With a program, its ref is resolved and its commit previewed in the background
 * (the template shows `resolving`, then `previewing`); the push webhook's secret is in the answer once.
 */
export async function createTemplate(deps: TemplatesDeps, principal: Principal, input: CreateTemplateInput) {
  const hasProgram = input.program !== undefined;
  checkProgramOrProvider(input.provider, hasProgram);
  checkPool(principal, input, input.provider, hasProgram, input.warmPoolSize ?? 0);
  if (input.program) await deps.egress.screen(input.program.repository);
  const webhook = newWebhookSecret(deps);
  const now = deps.clock.now();
  const created = await withNameCheck(input.name, () =>
    deps.db.$transaction(async (tx) => {
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
          programRepository: input.program?.repository,
          programPath: input.program?.path,
          programRef: input.program?.ref,
          ...poolUpdateData(input.poolUpdate),
          registrationTimeoutSeconds: input.registrationTimeoutSeconds,
          sealedWebhookSecret: webhook.sealed,
          createdBy: principal.kind === 'user' ? principal.userId : principal.serviceAccountId,
          createdAt: now,
          updatedAt: now,
        },
      });
      await auditTemplate(deps, tx, principal, t.id, 'created', t);
      await track(deps, tx, t);
      await converge(deps, tx, principal.organizationId, t);
      return t;
    }),
  );
  const [view] = await templateViews(deps, deps.db, [created]);
  return { ...view!, webhookSecret: webhook.secret };
}
