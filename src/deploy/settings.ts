import { z } from 'zod';
import { dnsLabel } from '../lib/kubernetes-names.ts';

/** The Pulumi config namespace of every setting: `agentplane:<name>` in stacks/Pulumi.<stack>.yaml. */
const SETTINGS_NAMESPACE = 'agentplane';

/** Settings that hold credentials: the stack file must keep them encrypted (`pulumi config set --secret`). */
const SECRET_SETTINGS = ['databaseUrl', 'postgresPassword', 'jwtSecret', 'pulumiPassphrase', 'encryptionKey'] as const;

/** Where the server keeps local state in its container; a file:// Pulumi backend must live below it. */
export const DATA_DIR = '/var/lib/agentplane';

/** Env vars the program sets itself; `env` may not override them, or the wiring would silently break. */
const MANAGED_ENV = [
  'PORT',
  'AGENTPLANE_HOST',
  'AGENTPLANE_DATA_DIR',
  'AGENTPLANE_WORKER',
  'AGENTPLANE_METRICS_PORT',
  'AGENTPLANE_JWT_SECRET',
  'AGENTPLANE_COMPUTERS_NAMESPACE',
  'DATABASE_URL',
  'PULUMI_BACKEND_URL',
  'PULUMI_CONFIG_PASSPHRASE',
] as const;

// Config values arrive as strings ("3"); numbers written in YAML arrive the same way.
const int = (min: number, max: number) =>
  z.preprocess((v) => (typeof v === 'string' && /^-?\d+$/.test(v.trim()) ? Number(v) : v), z.number().int().min(min).max(max));
const cpu = z.string().regex(/^\d+(\.\d+)?m?$/, 'must be a CPU quantity such as "250m" or "2"');
const memory = z.string().regex(/^\d+(Ki|Mi|Gi|Ti|k|M|G|T)?$/, 'must be a memory quantity such as "512Mi" or "2Gi"');
const storage = memory;

const ResourcesSchema = z
  .object({
    requests: z.object({ cpu, memory }).strict(),
    limits: z.object({ cpu, memory }).strict(),
  })
  .strict();

const PostgresSchema = z
  .object({
    image: z.string().min(1).default('postgres:17-bookworm'),
    storageSize: storage.default('10Gi'),
    storageClassName: z.string().min(1).optional(),
  })
  .strict();

const IngressSchema = z
  .object({
    host: z.string().regex(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/, 'must be a host name such as agentplane.example.com'),
    className: z.string().min(1).optional(),
    tlsSecretName: z.string().min(1).optional(),
    annotations: z.record(z.string(), z.string()).default({}),
  })
  .strict();

const ServiceSchema = z
  .object({
    type: z.enum(['ClusterIP', 'NodePort', 'LoadBalancer']).default('ClusterIP'),
    port: int(1, 65535).default(80),
  })
  .strict();

const defaultResources = {
  requests: { cpu: '250m', memory: '512Mi' },
  limits: { cpu: '2', memory: '2Gi' },
};

const SettingsSchema = z
  .object({
    image: z.string().regex(/^\S+$/, 'must be an image reference such as registry.example.com/agentplane:0.1.0'),
    imagePullPolicy: z.enum(['Always', 'IfNotPresent', 'Never']).default('IfNotPresent'),
    namespace: dnsLabel.default('agentplane'),
    computersNamespace: dnsLabel.default('agentplane-computers'),
    replicas: int(1, 100).default(1),
    workerReplicas: int(0, 100).default(0),
    resources: ResourcesSchema.default(defaultResources),
    workerResources: ResourcesSchema.default(defaultResources),
    database: z.enum(['external', 'in-cluster'], { message: 'must be "external" (set databaseUrl) or "in-cluster"' }),
    databaseUrl: z
      .string()
      .regex(/^postgres(ql)?:\/\/\S+$/, 'must be a postgres:// or postgresql:// URL')
      .optional(),
    postgres: PostgresSchema.default({ image: 'postgres:17-bookworm', storageSize: '10Gi' }),
    postgresPassword: z.string().min(16, 'must be at least 16 characters').optional(),
    jwtSecret: z.string().min(32, 'must be at least 32 characters').optional(),
    pulumiPassphrase: z.string().min(16, 'must be at least 16 characters'),
    /** AGENTPLANE_ENCRYPTION_KEY of every pod (32 bytes, base64); unset, derived from pulumiPassphrase. */
    encryptionKey: z
      .string()
      .refine((v) => Buffer.from(v, 'base64').length === 32, 'must be 32 bytes, base64: openssl rand -base64 32')
      .optional(),
    pulumiBackendUrl: z.string().regex(/^(s3|gs|azblob|file):\/\/\S+$/, 'must be an s3://, gs://, azblob:// or file:// URL'),
    service: ServiceSchema.default({ type: 'ClusterIP', port: 80 }),
    ingress: IngressSchema.optional(),
    logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    env: z.record(z.string().regex(/^[A-Z_][A-Z0-9_]*$/, 'must be an env var name'), z.string()).default({}),
    /** Write manifests to this directory instead of talking to a cluster (the provider's render mode). */
    renderYamlToDirectory: z.string().min(1).optional(),
    /** A kubeconfig context; the ambient one when unset. */
    kubeContext: z.string().min(1).optional(),
  })
  .strict()
  .superRefine((s, ctx) => {
    const issue = (path: string, message: string) => ctx.addIssue({ code: 'custom', path: [path], message });
    if (s.database === 'external') {
      if (!s.databaseUrl) issue('databaseUrl', 'is required with database "external": pulumi config set --secret databaseUrl postgres://...');
      if (s.postgresPassword) issue('postgresPassword', 'only applies to database "in-cluster"; remove it');
    } else {
      if (s.databaseUrl) issue('databaseUrl', 'only applies to database "external"; remove it or set database to "external"');
      if (!s.postgresPassword) issue('postgresPassword', 'is required with database "in-cluster": pulumi config set --secret postgresPassword ...');
    }
    if (s.pulumiBackendUrl.startsWith('file://')) {
      if (s.replicas > 1 || s.workerReplicas > 0) {
        issue('pulumiBackendUrl', 'file:// state is local to one pod; with several replicas or workers use s3://, gs:// or azblob://');
      }
      if (!s.pulumiBackendUrl.startsWith(`file://${DATA_DIR}/`)) {
        issue('pulumiBackendUrl', `a file:// backend must be below file://${DATA_DIR}/, the persistent data volume`);
      }
    }
    if (s.namespace === s.computersNamespace) {
      issue('computersNamespace', "must differ from namespace: the computers' role must not reach the control plane's own secrets");
    }
    for (const name of Object.keys(s.env)) {
      if ((MANAGED_ENV as readonly string[]).includes(name)) issue('env', `${name} is set by the deploy program; use its setting instead`);
    }
  });

export type Settings = z.infer<typeof SettingsSchema>;

/** A bad stack setting: thrown before any resource is registered, listing every problem at once. */
export class SettingsError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(`invalid stack settings:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'SettingsError';
    this.problems = problems;
  }
}

/**
 * Validates raw config values (strings as Pulumi hands them over, or parsed objects).
 * `secretKeys` names the settings that the stack file stores encrypted.
 */
export function parseSettings(raw: Record<string, unknown>, secretKeys: ReadonlySet<string> = new Set()): Settings {
  const problems: string[] = [];
  const parsed = SettingsSchema.safeParse(raw);
  if (!parsed.success) {
    for (const i of parsed.error.issues) {
      const key = i.path.length ? i.path.join('.') : '(settings)';
      const message = i.code === 'unrecognized_keys' ? `unknown setting(s) ${i.keys.join(', ')}` : i.message;
      problems.push(`${SETTINGS_NAMESPACE}:${key}: ${message}`);
    }
  }
  for (const key of SECRET_SETTINGS) {
    if (raw[key] !== undefined && !secretKeys.has(key)) {
      problems.push(`${SETTINGS_NAMESPACE}:${key}: must be stored encrypted: pulumi config set --secret ${key} ...`);
    }
  }
  if (problems.length || !parsed.success) throw new SettingsError(problems);
  return parsed.data;
}

/** Splits `agentplane:*` entries of a Pulumi config map into raw settings; JSON objects are parsed. */
export function rawSettings(all: Record<string, string>, isSecret: (fullKey: string) => boolean): { raw: Record<string, unknown>; secretKeys: Set<string> } {
  const raw: Record<string, unknown> = {};
  const secretKeys = new Set<string>();
  const prefix = `${SETTINGS_NAMESPACE}:`;
  for (const [fullKey, value] of Object.entries(all)) {
    if (!fullKey.startsWith(prefix)) continue;
    const key = fullKey.slice(prefix.length);
    const trimmed = value.trim();
    raw[key] = trimmed.startsWith('{') || trimmed.startsWith('[') ? parseJson(fullKey, trimmed) : value;
    if (isSecret(fullKey)) secretKeys.add(key);
  }
  return { raw, secretKeys };
}

function parseJson(key: string, text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new SettingsError([`${key}: is not valid structured config`]);
  }
}
