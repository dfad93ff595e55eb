import { z } from 'zod';

/** Latest instant a JavaScript Date can hold; later `expiresAt` values cannot be stored. */
const MAX_TIME_MS = 8_640_000_000_000_000;

/** Names people type and read in lists: 1-128 characters, not blank, no control characters. */
const nameSchema = (what: string) =>
  z
    .string()
    .min(1, `${what} must not be empty`)
    .max(128, `${what} must be at most 128 characters`)
    .regex(/\S/, `${what} must not be blank`)
    .regex(/^[^\u0000-\u001f\u007f]*$/, `${what} must not contain control characters`);

const descriptionSchema = z.string().max(1024, 'description must be at most 1024 characters');

const expiresAtSchema = z
  .int('expiresAt must be an integer (Unix milliseconds)')
  .positive('expiresAt must be a positive Unix time in milliseconds')
  .max(MAX_TIME_MS, 'expiresAt is too far in the future')
  .meta({ description: 'Unix ms after which the key stops authenticating; must be in the future' });

const Status = z.enum(['active', 'inactive', 'deleted']);
/** The statuses a caller may set; `deleted` is reached only through DELETE. */
const SettableStatus = z.enum(['active', 'inactive'], 'status must be "active" or "inactive"');

export const ServiceAccountIdParams = z.object({
  serviceAccountId: z.string().min(1).meta({ description: 'Service account id' }),
});
export const ApiKeyIdParams = ServiceAccountIdParams.extend({
  keyId: z.string().min(1).meta({ description: 'API key id' }),
});

const ServiceAccountSchema = z
  .strictObject({
    id: z.string(),
    name: z.string().meta({ description: 'Unique in the organization; immutable' }),
    description: z.string().optional(),
    status: Status,
    createdBy: z.string().meta({ description: 'Id of the user who created the account' }),
    teamIds: z.array(z.string()).optional(),
    createdAt: z.number().int().meta({ description: 'Unix ms' }),
    updatedAt: z.number().int().optional().meta({ description: 'Unix ms' }),
  })
  .meta({ id: 'ServiceAccount' });
export type ServiceAccountView = z.infer<typeof ServiceAccountSchema>;

const ApiKeySchema = z
  .strictObject({
    id: z.string(),
    name: z.string(),
    fingerprint: z.string().meta({ description: 'Non-reversible suffix of the key, for display' }),
    createdAt: z.number().int().meta({ description: 'Unix ms' }),
    expiresAt: z.number().int().optional().meta({ description: 'Unix ms, if set' }),
    isRevoked: z.boolean(),
    revokedAt: z.number().int().optional().meta({ description: 'Unix ms, if revoked' }),
  })
  .meta({ id: 'ServiceAccountApiKey' });
export type ApiKeyView = z.infer<typeof ApiKeySchema>;

/** A key as issued: the only time its full value is ever shown. */
const IssuedApiKeySchema = z
  .strictObject({
    id: z.string(),
    value: z.string().meta({ description: 'The full key; shown once and never retrievable again' }),
    fingerprint: z.string(),
    name: z.string(),
    expiresAt: z.number().int().optional().meta({ description: 'Unix ms, if set' }),
  })
  .meta({ id: 'IssuedServiceAccountApiKey' });
export type IssuedApiKeyView = z.infer<typeof IssuedApiKeySchema>;

export const CreateServiceAccountBody = z
  .strictObject({
    name: nameSchema('name'),
    description: descriptionSchema.optional(),
    status: SettableStatus,
  })
  .meta({ id: 'CreateServiceAccountBody' });
export type CreateServiceAccountInput = z.infer<typeof CreateServiceAccountBody>;

export const UpdateServiceAccountBody = z
  .strictObject(
    {
      description: descriptionSchema.optional(),
      status: SettableStatus.optional(),
    },
    {
      error: (issue) =>
        issue.code === 'unrecognized_keys' && issue.keys.includes('name') ? 'name is immutable; create a new service account to use another name' : undefined,
    },
  )
  .meta({ id: 'UpdateServiceAccountBody' });
export type UpdateServiceAccountInput = z.infer<typeof UpdateServiceAccountBody>;

export const CreateApiKeyBody = z
  .strictObject({ name: nameSchema('name'), expiresAt: expiresAtSchema.optional() })
  .meta({ id: 'CreateServiceAccountApiKeyBody' });
export type CreateApiKeyInput = z.infer<typeof CreateApiKeyBody>;

export const RotateApiKeyBody = z
  .strictObject({
    gracePeriodMinutes: z
      .int('gracePeriodMinutes must be an integer')
      .min(0, 'gracePeriodMinutes must be from 0 to 10')
      .max(10, 'gracePeriodMinutes must be from 0 to 10')
      .optional()
      .meta({ description: 'How long the old key keeps working (0-10 minutes; default 0: revoked at once)' }),
    expiresAt: expiresAtSchema.optional(),
  })
  .meta({ id: 'RotateServiceAccountApiKeyBody' });
export type RotateApiKeyInput = z.infer<typeof RotateApiKeyBody>;

export const ServiceAccountListResponse = z.strictObject({ serviceAccounts: z.array(ServiceAccountSchema) }).meta({ id: 'ServiceAccountList' });
export const ServiceAccountResponse = z.strictObject({ serviceAccount: ServiceAccountSchema }).meta({ id: 'ServiceAccountResponse' });
export const DeletedServiceAccountResponse = z.strictObject({ id: z.string(), deleted: z.literal(true) }).meta({ id: 'DeletedServiceAccount' });
export const ApiKeyListResponse = z.strictObject({ apiKeys: z.array(ApiKeySchema) }).meta({ id: 'ServiceAccountApiKeyList' });
export const IssuedApiKeyResponse = z.strictObject({ apiKey: IssuedApiKeySchema }).meta({ id: 'IssuedServiceAccountApiKeyResponse' });
