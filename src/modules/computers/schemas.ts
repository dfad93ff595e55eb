import { z } from 'zod';
import { STACK_OPERATIONS } from './lifecycle.ts';
import { computerRepo as parseRepoUrl } from '../../repos/policy.ts';

export const MAX_REPOS = 20;

/**
 * Computer names become path segments (`/computers/name/{name}`), host names and stack names,
 * so they keep to letters, digits, `.`, `_` and `-`, starting with a letter or digit.
 */
const ComputerName = z
  .string()
  .min(1, 'name must not be empty')
  .max(63, 'name must be at most 63 characters')
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, 'name may hold letters, digits, ".", "_" and "-", starting with a letter or digit')
  .meta({ description: 'Unique among the owner’s computers; 1-63 characters' });

const RemoteUser = z
  .string()
  .min(1, 'remoteUser must not be empty')
  .max(63, 'remoteUser must be at most 63 characters')
  .regex(/^[A-Za-z0-9_][A-Za-z0-9._-]*$/, 'remoteUser must be a unix user name')
  .meta({ description: 'The unix user agents run as on the machine' });

const HostId = z.uuid('hostId must be a UUID').meta({ description: 'Stable id of the physical machine' });

/** https/http/ssh/git/file URLs, or scp-style `git@host:owner/repo.git`, as the clone step accepts them. */
export const RepoUrl = z
  .string()
  .max(2048, 'a repository URL must be at most 2048 characters')
  .superRefine((value, ctx) => {
    try {
      parseRepoUrl(value);
    } catch (err) {
      ctx.addIssue({ code: 'custom', message: err instanceof Error ? err.message : String(err) });
    }
  });

const StepSchema = z.strictObject({
  id: z.string(),
  name: z.string(),
  status: z.string().meta({ description: 'pending, running, completed, failed or skipped' }),
  error: z.string().optional(),
  startedAt: z.number().optional(),
  completedAt: z.number().optional(),
  installSessionId: z.string().optional(),
});

const ComputerSourceSchema = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('template'), templateId: z.string() }),
  z.strictObject({ kind: z.literal('execution-template'), templateId: z.string() }),
  z.strictObject({ kind: z.literal('computer'), computerId: z.string() }),
]);

export const ComputerSchema = z
  .strictObject({
    id: z.string(),
    name: z.string(),
    providerType: z.string().meta({ description: '`byom` for a registered machine, else the managed provider' }),
    status: z.enum(['provisioning', 'active', 'error', 'deleted']).meta({
      description: '`deleted` (agentplane extension) only in lists with includeDeleted=true; the teardown step says how the teardown went',
    }),
    createdAt: z.number().meta({ description: 'Unix ms' }),
    hostId: z.string().optional(),
    isListed: z.boolean(),
    remoteUser: z.string().optional(),
    relayClientUrl: z.string().optional().meta({
      description: "WebSocket address `agentplane ssh` and `agentplane port-forward` reach this computer through, authenticated with the caller's credential",
    }),
    relayAgentUrl: z
      .string()
      .optional()
      .meta({ description: 'Where an agent-registered machine keeps its tunnel: the relay on the API address (`wss://.../api/v0/relay/agent`)' }),
    clonedRepoDirectories: z.array(z.string()),
    ownerPrincipalKind: z.enum(['human', 'service']),
    ownerId: z.string(),
    computerSource: ComputerSourceSchema.optional(),
    provisioningSteps: z.array(StepSchema).optional(),
    powerState: z
      .enum(['running', 'paused'])
      .optional()
      .meta({ description: 'Managed computers (agentplane extension): paused after the idle time; POST restart resumes' }),
    deletedAt: z.number().optional().meta({ description: 'Unix ms; only in lists with includeDeleted=true' }),
    operation: z
      .enum(STACK_OPERATIONS)
      .optional()
      .meta({ description: 'Managed computers (agentplane extension): the stack operation under way (provision, pause, resume, teardown, update)' }),
    operationError: z.string().optional().meta({ description: 'Managed computers (agentplane extension): why the last stack operation failed' }),
    templateVersion: z
      .strictObject({ id: z.string(), commit: z.string() })
      .nullable()
      .meta({ description: "A program template's computer (agentplane extension): the version of the program its stack runs; null otherwise" }),
    updateAvailable: z.boolean().meta({
      description: "agentplane extension: the computer's template has a newer current version (preview passed); POST /computers/{id}/update runs it",
    }),
  })
  .meta({ id: 'Computer' });
export type ComputerView = z.infer<typeof ComputerSchema>;

export const ComputerListResponse = z.strictObject({ computers: z.array(ComputerSchema) });

const DirectConnection = z.strictObject({
  type: z.literal('direct').optional(),
  host: z
    .string()
    .min(1, 'connection.host must not be empty')
    .max(253)
    .regex(/^[A-Za-z0-9.:_-]+$/, 'connection.host must be a host name or an IP address'),
  port: z.int().min(1).max(65535).default(22),
});
const AgentConnection = z.strictObject({
  type: z.literal('agent'),
  agentPublicKey: z.string().min(1).max(8192).meta({ description: 'OpenSSH public key the agent authenticates to the relay with' }),
  hostPublicKey: z.string().min(1).max(8192).meta({ description: 'OpenSSH public host key the agent serves SSH sessions with' }),
});
const ConnectionSchema = z.union([DirectConnection, AgentConnection]).meta({
  description:
    'How the control plane reaches a byom machine (agentplane extension): `{host, port}` to SSH in directly with the ' +
    'organization\'s key, or `{type: "agent", ...}` as sent by `agentplane agent` for a machine that dials out.',
});
export type Connection = z.infer<typeof ConnectionSchema>;

const TemplateSource = (kind: 'template' | 'execution-template') =>
  z.strictObject({ kind: z.literal(kind), templateId: z.string().min(1), isListed: z.boolean() });

export const CreateComputerBody = z.strictObject({
  name: ComputerName,
  provider: z.string().min(1).optional().meta({ description: '`byom`, or a managed provider from GET /computers/providers' }),
  hostId: HostId.optional(),
  remoteUser: RemoteUser.optional(),
  repos: z.array(RepoUrl).max(MAX_REPOS, `at most ${MAX_REPOS} repositories`).optional(),
  autoInstallDeps: z.boolean().optional(),
  serviceAccountId: z.string().min(1).optional().meta({ description: 'Create the computer for this service account (managers and owners)' }),
  source: z
    .discriminatedUnion('kind', [
      TemplateSource('template'),
      TemplateSource('execution-template'),
      z.strictObject({ kind: z.literal('computer'), sourceComputerId: z.string().min(1) }),
    ])
    .optional(),
  connection: ConnectionSchema.optional(),
});
export type CreateComputerInput = z.infer<typeof CreateComputerBody>;

const NamePrefix = z
  .string()
  .min(1, 'namePrefix must not be empty')
  .max(59, 'namePrefix must be at most 59 characters, leaving room for "-<n>"')
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, 'namePrefix may hold letters, digits, ".", "_" and "-", starting with a letter or digit');

const MAX_BULK = 20;

export const BulkCreateBody = z.strictObject({
  quantity: z.int('quantity must be an integer').min(1, 'quantity must be at least 1').max(MAX_BULK, `quantity must be at most ${MAX_BULK}`),
  namePrefix: NamePrefix.meta({ description: 'Computers are named <namePrefix>-<n> with the lowest free n' }),
  provider: z.string().min(1).optional().meta({ description: 'A managed provider from GET /computers/providers' }),
  repos: z.array(RepoUrl).max(MAX_REPOS, `at most ${MAX_REPOS} repositories`).optional(),
  autoInstallDeps: z.boolean().optional(),
  serviceAccountId: z.string().min(1).optional(),
});
export type BulkCreateInput = z.infer<typeof BulkCreateBody>;

export const BulkCreateResponse = z
  .strictObject({
    computers: z.array(ComputerSchema),
    requestedQuantity: z.int(),
    error: z
      .strictObject({ message: z.string() })
      .optional()
      .meta({ description: 'Why creation stopped midway; the computers created before it stay (no rollback)' }),
  })
  .meta({ id: 'BulkCreateComputersResponse' });

export const UpdateComputerBody = z.strictObject({
  name: ComputerName.optional(),
  hostId: HostId.optional().meta({ description: 'Assignable only while the computer has none' }),
  remoteUser: RemoteUser.optional(),
});
export type UpdateComputerInput = z.infer<typeof UpdateComputerBody>;

const TrueFalse = (name: string) => z.enum(['true', 'false'], `${name} must be "true" or "false"`).optional();

export const ListComputersQuery = z.strictObject({
  hostId: HostId.optional(),
  includeProvisioningSteps: TrueFalse('includeProvisioningSteps'),
  includeUnlisted: TrueFalse('includeUnlisted'),
  includeDeleted: TrueFalse('includeDeleted').meta({
    description: 'agentplane extension: also deleted computers, with deletedAt and (with steps) their teardown step',
  }),
});

export const ComputerIdParams = z.object({ computerId: z.string().min(1).meta({ description: 'Computer id' }) });
export const ComputerNameParams = z.object({ name: ComputerName });

export const MetricsQuery = z.strictObject({
  start: z.iso
    .datetime({ offset: true, message: 'start must be an ISO 8601 date-time, e.g. 2026-11-22T10:00:00Z' })
    .optional()
    .meta({ description: 'Start of time range (ISO 8601)' }),
});
const MetricSampleSchema = z.strictObject({
  timestamp: z.string(),
  cpuUsedPct: z.number(),
  cpuCount: z.number(),
  memUsed: z.number(),
  memTotal: z.number(),
  diskUsed: z.number(),
  diskTotal: z.number(),
});
export const MetricsResponse = z.array(MetricSampleSchema).meta({ id: 'ComputerMetrics' });

export const RefreshResponse = z.strictObject({
  configured: z.int().meta({ description: 'Source-control integrations written onto the machine' }),
});
export const RestartResponse = z.strictObject({});
export const SshPublicKeyResponse = z.strictObject({
  publicKey: z.string().meta({ description: "The organization's control-plane key: add it to ~/.ssh/authorized_keys on a byom machine" }),
});

export const ProvidersQuery = z.strictObject({
  includeUnavailable: TrueFalse('includeUnavailable').meta({
    description: 'agentplane extension: also list the providers this deployment cannot use now, with what each is missing',
  }),
});

export const ProvidersResponseSchema = z
  .strictObject({
    providers: z.array(z.string()).meta({ description: 'Managed compute providers usable by this organization now' }),
    unavailable: z
      .array(
        z.strictObject({
          name: z.string(),
          missing: z.array(z.string()).meta({ description: 'Each missing prerequisite, with what provides it' }),
        }),
      )
      .optional()
      .meta({ description: 'agentplane extension, with includeUnavailable=true: providers known but not usable now' }),
  })
  .meta({ id: 'ComputerProviders' });

export const RegisterDialInBody = z.strictObject({
  registrationToken: z
    .string()
    .min(1)
    .max(200)
    .meta({ description: 'The single-use token the program passed to the machine (`agentplane:registrationToken`)' }),
  name: z.string().max(200).optional().meta({ description: "The agent's --name; the computer keeps its own name" }),
  remoteUser: RemoteUser,
  hostId: HostId.optional(),
  connection: AgentConnection,
});
export type RegisterDialInInput = z.infer<typeof RegisterDialInBody>;

export const RegisteredDialInResponse = z
  .strictObject({
    id: z.string(),
    name: z.string(),
    relayAgentUrl: z.string().nullable().meta({ description: 'Where the agent keeps its tunnel' }),
  })
  .meta({ id: 'RegisteredDialIn' });
