import { z } from 'zod';
import { WarmPoolSize } from '../computers/pool/schemas.ts';
import { MAX_REPOS, RepoUrl } from '../computers/schemas.ts';

const TemplateName = z.string().trim().min(1, 'name must not be empty').max(100, 'name must be at most 100 characters');
const SetupScript = z
  .string()
  .max(10_000, 'setupScript must be at most 10000 characters')
  .meta({ description: 'Run with bash in the home directory of each computer made from the template, after the clones' });

export const ComputerTemplateSchema = z
  .strictObject({
    id: z.string(),
    name: z.string(),
    provider: z.string().optional().meta({ description: 'Managed provider of computers made from it, unless the create request names one' }),
    repos: z.array(z.string()),
    autoInstallDeps: z.boolean(),
    setupScript: z.string().optional(),
    warmPoolSize: z.number().meta({ description: 'Computers made from it kept provisioned ahead (0: no warm pool)' }),
    createdAt: z.number().meta({ description: 'Unix ms' }),
    updatedAt: z.number().meta({ description: 'Unix ms' }),
  })
  .meta({ id: 'ComputerTemplate' });
export type ComputerTemplateView = z.infer<typeof ComputerTemplateSchema>;

export const CreateTemplateBody = z.strictObject({
  name: TemplateName,
  provider: z.string().min(1).optional(),
  repos: z.array(RepoUrl).max(MAX_REPOS, `at most ${MAX_REPOS} repositories`).optional(),
  autoInstallDeps: z.boolean().optional(),
  setupScript: SetupScript.optional(),
  warmPoolSize: WarmPoolSize.optional(),
});
export type CreateTemplateInput = z.infer<typeof CreateTemplateBody>;

export const UpdateTemplateBody = z.strictObject({
  name: TemplateName.optional(),
  provider: z.string().min(1).nullable().optional(),
  repos: z.array(RepoUrl).max(MAX_REPOS, `at most ${MAX_REPOS} repositories`).optional(),
  autoInstallDeps: z.boolean().optional(),
  setupScript: SetupScript.nullable().optional(),
  warmPoolSize: WarmPoolSize.optional(),
});
export type UpdateTemplateInput = z.infer<typeof UpdateTemplateBody>;

export const TemplateIdParams = z.object({ templateId: z.string().min(1).meta({ description: 'Template id' }) });
export const TemplateListResponse = z.strictObject({ templates: z.array(ComputerTemplateSchema) });
