import { z } from 'zod';
import { PageQuerySchema, PaginationSchema } from '../../http/pagination.ts';

export { PageQuerySchema };

/** Email as sent by a client; services compare and store it lower-cased. */
const EmailSchema = z.email('must be an email address').max(254, 'must be at most 254 characters');

/** Email as stored; answers do not re-validate it, so one odd stored address cannot fail a whole list. */
const StoredEmailSchema = z.string().meta({ format: 'email' });

const RoleSchema = z.enum(['owner', 'manager', 'user', 'guest']).meta({ id: 'OrganizationRole' });

// ---- users ----

const OrganizationUserSchema = z
  .strictObject({
    id: z.string().meta({ description: "Identity-provider user id; agentplane's own id (usr_...) until the user first signs in with a token" }),
    email: StoredEmailSchema,
    firstName: z.string().optional(),
    lastName: z.string().optional(),
    createdAt: z.iso.datetime().meta({ description: 'When the user joined or was invited to this organization' }),
    lastSignInAt: z.iso.datetime().optional(),
    metadata: z.record(z.string(), z.string()).meta({ description: 'Custom metadata' }),
    userId: z
      .string()
      .meta({ description: "agentplane extension: agentplane's own user id (usr_...), as computers' ownerId and service accounts' createdBy name the user" }),
    role: RoleSchema.meta({ description: 'agentplane extension: the role in this organization' }),
    status: z.enum(['active', 'invited']).meta({ description: 'agentplane extension: a member, or an invitation not accepted yet' }),
  })
  .meta({ id: 'OrganizationUser' });
export type OrganizationUser = z.infer<typeof OrganizationUserSchema>;

export const UserListSchema = z.strictObject({ users: z.array(OrganizationUserSchema), pagination: PaginationSchema }).meta({ id: 'OrganizationUserList' });

export const InviteBodySchema = z
  .strictObject({
    email: EmailSchema,
    role: RoleSchema.default('user').meta({ description: 'Role to grant; only owners may grant owner' }),
  })
  .meta({ id: 'InviteUserRequest' });
export type InviteBody = z.infer<typeof InviteBodySchema>;

const InviteStatusSchema = z.enum(['invited', 'already_member', 'role_updated', 'already_invited', 'error']);

export const InviteResultSchema = z
  .strictObject({
    email: z.email(),
    role: RoleSchema,
    status: InviteStatusSchema,
    error: z.string().optional().meta({ description: 'Why the invitation failed, when status is error' }),
  })
  .meta({ id: 'InviteUserResult' });
export type InviteResult = z.infer<typeof InviteResultSchema>;

export const RemoveUserQuerySchema = z.strictObject({
  email: EmailSchema.meta({ description: 'Email of the member or pending invitation to remove' }),
});

// ---- credits limits ----

const MIN_CREDIT_LIMIT = 1_000_000;

/** A limit as a client sets it: at least 1,000,000 credits, or null for none. */
const CreditLimitSchema = z
  .number('must be an integer or null')
  .int('must be an integer')
  .min(MIN_CREDIT_LIMIT, `must be at least ${MIN_CREDIT_LIMIT.toLocaleString('en-US')}`)
  .nullable()
  .meta({ description: 'Credits limit (at least 1,000,000), or null for no limit' });

/** A limit as the server reports it. */
const StoredLimitSchema = z.number().int().min(0).nullable();

export const GlobalLimitBodySchema = z.strictObject({ limit: CreditLimitSchema }).meta({ id: 'SetGlobalLimitRequest' });
export const GlobalLimitSchema = z.strictObject({ limit: StoredLimitSchema }).meta({ id: 'GlobalLimit' });

const UserLimitSchema = z.strictObject({ email: StoredEmailSchema, limit: StoredLimitSchema }).meta({ id: 'UserLimit' });

export const UserLimitsSchema = z.strictObject({ globalLimit: StoredLimitSchema, userLimits: z.array(UserLimitSchema) }).meta({ id: 'UserLimits' });

/** One entry of a per-user update, checked on its own so a bad entry fails alone. */
export const UserLimitEntrySchema = z.strictObject({ email: EmailSchema, limit: CreditLimitSchema });
export type UserLimitEntry = z.infer<typeof UserLimitEntrySchema>;

/**
 * An entry as the body carries it: only a string email is required here, because a failed entry
 * is reported by the email it named; everything else is checked per entry.
 */
const RawUserLimitEntrySchema = z.looseObject(
  {
    email: z.string('each entry needs an email string').meta({ format: 'email' }),
    limit: z.unknown().optional().meta({
      type: 'integer',
      nullable: true,
      minimum: MIN_CREDIT_LIMIT,
      description: 'Credits limit (at least 1,000,000), or null to remove the override',
    }),
  },
  'each entry must be an object {email, limit}',
);
export type RawUserLimitEntry = z.infer<typeof RawUserLimitEntrySchema>;

/** `{users: [...]}`, or the bare array older clients send (turned into the former first). */
export const UserLimitsBodySchema = z
  .preprocess(
    (body) => (Array.isArray(body) ? { users: body } : body),
    z.strictObject(
      {
        users: z.array(RawUserLimitEntrySchema).min(1, 'send at least one entry').max(100, 'send at most 100 entries per request'),
      },
      'the body must be {"users": [{email, limit}, ...]} or a bare array of such entries',
    ),
  )
  .meta({ id: 'SetUserLimitsRequest', description: 'A bare array of the entries is accepted too' });
export type UserLimitsBody = z.infer<typeof UserLimitsBodySchema>;

export const UserLimitsResultSchema = z
  .strictObject({
    updated: z.array(UserLimitSchema),
    errors: z.array(
      z.strictObject({
        email: z.string().meta({ description: 'The email as sent' }),
        message: z.string().meta({ description: 'Why this entry was not applied' }),
      }),
    ),
  })
  .meta({ id: 'SetUserLimitsResult' });
export type UserLimitsResult = z.infer<typeof UserLimitsResultSchema>;

// ---- enterprise controls ----

const SettingsSchema = z.record(z.string(), z.unknown()).meta({
  description:
    'Settings document; its properties may change between API versions, so parse it generically. ' +
    'customModels[].apiKey is answered masked ("••••" and its last four characters); send the mask back or leave apiKey out ' +
    'to keep the stored key, a new key to replace it, null to remove it',
});

export const EnterpriseControlsSchema = z
  .strictObject({
    revision: z.number().int().min(0).meta({ description: '0 until the first change' }),
    settings: SettingsSchema,
  })
  .meta({ id: 'EnterpriseControls' });

export const EnterpriseControlsBodySchema = z.strictObject({ settings: SettingsSchema }).meta({ id: 'SetEnterpriseControlsRequest' });
export type EnterpriseControlsBody = z.infer<typeof EnterpriseControlsBodySchema>;

const EnterpriseControlChangeSchema = z
  .strictObject({
    revision: z.number().int().min(1),
    settings: SettingsSchema,
    user: z.strictObject({
      id: z.string().meta({ description: 'Identity-provider user id of whoever made the change, as in the users list' }),
      email: StoredEmailSchema,
      name: z.string().meta({ description: 'Display name; the email when the user has no name' }),
    }),
    updatedAt: z.iso.datetime(),
  })
  .meta({ id: 'EnterpriseControlChange' });

export const EnterpriseHistorySchema = z
  .strictObject({ changes: z.array(EnterpriseControlChangeSchema), pagination: PaginationSchema })
  .meta({ id: 'EnterpriseControlChangeList' });

// ---- agent turns (agentplane extension) ----

const TurnCountsSchema = {
  running: z.number().int().meta({ description: 'Agent turns running now' }),
  pending: z.number().int().meta({ description: 'Sessions with messages waiting for a turn (status pending), including those over a limit' }),
};

export const TurnQueueSchema = z
  .strictObject({
    limits: z
      .strictObject({
        perOrganization: z
          .number()
          .int()
          .meta({ description: "Turns of this organization running at once across every replica; more wait, pending, in their messages' order" }),
        perOwner: z.number().int().meta({ description: 'Turns of one user or service account running at once' }),
      })
      .meta({ description: "The deployment's limits (AGENTPLANE_TURNS_PER_ORGANIZATION, AGENTPLANE_TURNS_PER_OWNER)" }),
    ...TurnCountsSchema,
    owners: z.array(
      z.strictObject({
        ownerKind: z.enum(['human', 'service']),
        ownerId: z.string().meta({ description: 'The user (usr_...) or service account id' }),
        ...TurnCountsSchema,
      }),
    ),
  })
  .meta({ id: 'TurnQueue' });
