import { z } from 'zod';

const PROVIDERS = ['github', 'gitea'] as const;

const BaseUrl = z
  .string()
  .max(2048, 'baseUrl must be at most 2048 characters')
  .refine((v) => {
    try {
      const u = new URL(v);
      return (u.protocol === 'https:' || u.protocol === 'http:') && !u.username && !u.password && !u.search && !u.hash;
    } catch {
      return false;
    }
  }, 'baseUrl must be an http(s) URL without credentials, query or fragment, e.g. https://github.com')
  .meta({ description: "The forge's web address: https://github.com, a GitHub Enterprise Server, or a Gitea/Forgejo server" });

export const CreateIntegrationBody = z
  .strictObject({
    provider: z.enum(PROVIDERS, { message: 'provider must be "github" (github.com or GitHub Enterprise Server) or "gitea" (Gitea or Forgejo)' }),
    baseUrl: BaseUrl,
    token: z
      .string()
      .min(1, 'token must not be empty')
      .max(1024, 'token must be at most 1024 characters')
      .meta({ description: 'A personal access token; stored encrypted, never returned' }),
    username: z.string().min(1).max(255).optional().meta({ description: 'The user name git sends with the token (default: the account the token belongs to)' }),
  })
  .meta({ id: 'CreateSourceControlIntegrationRequest' });
export type CreateIntegrationBody = z.infer<typeof CreateIntegrationBody>;

export const IntegrationIdParams = z.object({ integrationId: z.string().min(1) });

export const IntegrationSchema = z
  .strictObject({
    id: z.string(),
    provider: z.enum(PROVIDERS),
    baseUrl: z.string(),
    host: z.string(),
    username: z.string(),
    login: z.string().nullable().meta({ description: 'The account the token belongs to, as the forge answered on create; null for seeded connections' }),
    token: z.string().optional().meta({ description: 'The token, masked (managers and owners only)' }),
    scopes: z
      .array(z.string())
      .nullable()
      .optional()
      .meta({ description: 'On create: the scopes the forge reports for the token (GitHub classic tokens); null when it does not say' }),
    origin: z.enum(['api', 'config']).meta({ description: 'api: created here; config: seeded from AGENTPLANE_GIT_INTEGRATIONS' }),
    createdAt: z.number().int(),
  })
  .meta({ id: 'SourceControlIntegration' });
export type IntegrationView = z.infer<typeof IntegrationSchema>;

export const IntegrationListSchema = z.strictObject({ integrations: z.array(IntegrationSchema) });
