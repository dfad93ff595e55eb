import type { Principal } from '../../auth/principal.ts';
import type { PageQuery } from '../../http/pagination.ts';
import { createTemplate } from './create.ts';
import type { TemplatesDeps } from './deps.ts';
import { receiveTemplatePush } from './push.ts';
import { getTemplate, listTemplates } from './read.ts';
import { removeTemplate } from './remove.ts';
import type { CreateTemplateInput, UpdateTemplateInput } from './schemas.ts';
import { updateTemplate } from './update.ts';
import { getVersion, listVersions } from './versions.ts';
import { rotateWebhookSecret } from './webhook-secret.ts';

/** Computer templates: per-organization recipes for managed computers (agentplane extension); each operation lives in its own file. */
export function createTemplatesService(deps: TemplatesDeps) {
  return {
    list: (p: Principal) => listTemplates(deps, p),
    get: (p: Principal, templateId: string) => getTemplate(deps, p, templateId),
    create: (p: Principal, input: CreateTemplateInput) => createTemplate(deps, p, input),
    update: (p: Principal, templateId: string, input: UpdateTemplateInput) => updateTemplate(deps, p, templateId, input),
    remove: (p: Principal, templateId: string) => removeTemplate(deps, p, templateId),
    versions: (p: Principal, templateId: string, page: PageQuery) => listVersions(deps, p, templateId, page),
    version: (p: Principal, templateId: string, versionId: string) => getVersion(deps, p, templateId, versionId),
    rotateWebhookSecret: (p: Principal, templateId: string) => rotateWebhookSecret(deps, p, templateId),
    push: (templateId: string, header: (name: string) => string | undefined, body: Buffer) => receiveTemplatePush(deps, templateId, header, body),
  };
}
export type TemplatesService = ReturnType<typeof createTemplatesService>;
