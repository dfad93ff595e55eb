import os from 'node:os';
import path from 'node:path';
import v8 from 'node:v8';
import { z } from 'zod';
import { parseEgressAllow } from './egress/policy.ts';
import { dnsLabel, dnsSubdomain } from './lib/kubernetes-names.ts';
import { parseLocalAllow } from './provisioning/providers/local/allow.ts';
import { defaultLocalRoot } from './provisioning/providers/local/names.ts';

const bool = z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1');

// Share of a computer's limit it requests (what the scheduler reserves): above 0, at most 1.
const fraction = z.coerce.number().gt(0, 'must be above 0').max(1, 'must be at most 1 (the limit itself)');

const EnvSchema = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  AGENTPLANE_HOST: z.string().min(1).default('0.0.0.0'),
  AGENTPLANE_DATA_DIR: z.string().min(1).default('./.agentplane'),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// URL')
    .optional(),
  AGENTPLANE_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  // Unset: readable lines when the log goes to a terminal, JSON otherwise.
  AGENTPLANE_LOG_FORMAT: z.enum(['json', 'pretty']).optional(),
  AGENTPLANE_EGRESS_ALLOW: z.string().optional(),
  AGENTPLANE_BODY_LIMIT: z.string().default('1mb'),
  AGENTPLANE_SHUTDOWN_TIMEOUT_MS: z.coerce.number().int().positive().default(30_000),
  AGENTPLANE_JWT_SECRET: z.string().min(32, 'must be at least 32 characters').optional(),
  AGENTPLANE_JWT_JWKS_URL: z.url().optional(),
  AGENTPLANE_JWT_ISSUER: z.string().optional(),
  AGENTPLANE_JWT_AUDIENCE: z.string().optional(),
  AGENTPLANE_SESSIONS_ORGS: z.string().default('*'),
  AGENTPLANE_WORKER: bool.default(true),
  AGENTPLANE_BOOTSTRAP_ORG: z.string().min(1).default('default'),
  AGENTPLANE_BOOTSTRAP_EMAIL: z.email().default('owner@agentplane.local'),
  AGENTPLANE_PULUMI_HOME: z.string().optional(),
  // The `kubernetes` managed-computer provider. The deploy program sets the namespace (its Role reaches only that one).
  AGENTPLANE_COMPUTERS_NAMESPACE: dnsLabel.default('agentplane-computers'),
  AGENTPLANE_K8S_COMPUTER_IMAGE: z
    .string()
    .regex(/^\S+$/, 'must be an image reference such as registry.example.com/agentplane-computer:0.1.0')
    .default('agentplane-computer:latest'),
  AGENTPLANE_K8S_IMAGE_PULL_POLICY: z.enum(['Always', 'IfNotPresent', 'Never']).default('IfNotPresent'),
  AGENTPLANE_K8S_STORAGE_CLASS: dnsSubdomain.optional(),
  AGENTPLANE_K8S_RUNTIME_CLASS: dnsSubdomain.optional(),
  AGENTPLANE_K8S_CPU_REQUEST_FRACTION: fraction.default(0.25),
  AGENTPLANE_K8S_MEMORY_REQUEST_FRACTION: fraction.default(1),
  AGENTPLANE_K8S_CONTEXT: z.string().min(1).optional(),
  AGENTPLANE_ENCRYPTION_KEY: z.string().optional(),
  AGENTPLANE_SSH_GATEWAY_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  AGENTPLANE_SSH_KEEPALIVE_SECONDS: z.coerce.number().positive().max(300).default(10),
  AGENTPLANE_PUBLIC_URL: z
    .url()
    .regex(/^https?:\/\//, 'must be an http:// or https:// URL')
    .optional(),
  AGENTPLANE_TRUST_PROXY: z
    .string()
    .regex(/^(true|false|\d+|[\w.:/]+(\s*,\s*[\w.:/]+)*)$/, 'must be true, false, a number of proxy hops, or proxy addresses (loopback, 10.0.0.0/8, ...)')
    .optional(),
  AGENTPLANE_RELAY_PEER_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  AGENTPLANE_RELAY_PEER_HOST: z.string().min(1).optional(),
  AGENTPLANE_GIT_INTEGRATIONS: z.string().optional(),
  AGENTPLANE_APP_URL: z.url().optional(),
  AGENTPLANE_MAX_CONCURRENT_SESSIONS: z.coerce.number().int().min(1).default(10),
  AGENTPLANE_SESSION_RETENTION_DAYS: z.coerce.number().int().min(0).default(30),
  AGENTPLANE_APPROVAL_TIMEOUT_SECONDS: z.coerce.number().int().min(1).default(3600),
  AGENTPLANE_TURN_CONCURRENCY: z.coerce.number().int().min(1).max(10_000).optional(),
  AGENTPLANE_TURNS_PER_ORGANIZATION: z.coerce.number().int().min(1).default(100),
  AGENTPLANE_TURNS_PER_OWNER: z.coerce.number().int().min(1).default(20),
  AGENTPLANE_DEFAULT_MODEL: z.string().trim().min(1).optional(),
  AGENTPLANE_PULUMI_BACKEND_URL: z
    .string()
    .regex(/^[a-z][a-z0-9+.-]*:\/\//, 'must be a URL Pulumi accepts as a backend, e.g. file:///var/lib/agentplane/pulumi or s3://bucket/prefix')
    .optional(),
  AGENTPLANE_PULUMI_PASSPHRASE: z.string().min(16, 'must be at least 16 characters').optional(),
  AGENTPLANE_PROVISION_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(10),
  AGENTPLANE_PROVISION_TIMEOUT_SECONDS: z.coerce.number().int().min(30).default(900),
  AGENTPLANE_COMPUTER_IDLE_MINUTES: z.coerce.number().int().min(0).default(60),
  AGENTPLANE_COMPUTER_CPUS: z.coerce.number().positive().max(256).default(1),
  AGENTPLANE_COMPUTER_MEMORY_MIB: z.coerce.number().int().min(64).default(2048),
  AGENTPLANE_COMPUTER_DISK_GIB: z.coerce.number().int().min(1).default(10),
  AGENTPLANE_EVENTS_RETENTION_HOURS: z.coerce.number().positive().default(72),
  AGENTPLANE_EVENTS_HEARTBEAT_SECONDS: z.coerce.number().positive().max(300).default(15),
  AGENTPLANE_EVENTS_CLIENT_BUFFER_BYTES: z.coerce.number().int().min(16_384).default(1_048_576),
  AGENTPLANE_WEBHOOK_RETRY_SCHEDULE: z
    .string()
    .regex(/^\s*\d+(\.\d+)?(\s*,\s*\d+(\.\d+)?)*\s*$/, 'must be comma-separated delays in seconds, e.g. 5,300,1800')
    .default('5,300,1800,7200,18000,36000,36000'),
  AGENTPLANE_WEBHOOK_TIMEOUT_SECONDS: z.coerce.number().positive().max(300).default(15),
  AGENTPLANE_WEBHOOK_ENDPOINT_CONCURRENCY: z.coerce.number().int().min(1).max(100).default(4),
  AGENTPLANE_WEBHOOK_DISABLE_AFTER_HOURS: z.coerce.number().nonnegative().default(120),
  AGENTPLANE_LOCAL_PROVIDER: bool.default(true),
  AGENTPLANE_WIKI_MAX_FILES: z.coerce.number().int().min(1).default(50_000),
  AGENTPLANE_WIKI_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(1)
    .default(1024 * 1024 * 1024),
  AGENTPLANE_WIKI_RUN_TIMEOUT_SECONDS: z.coerce.number().int().min(30).default(1800),
  AGENTPLANE_WIKI_UPLOAD_LIMIT: z
    .string()
    .regex(/^\d+(kb|mb|gb)?$/i, 'must be a size like 20mb')
    .default('20mb'),
  AGENTPLANE_WIKI_VIDEO_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(1)
    .default(500 * 1024 * 1024),
  AGENTPLANE_WIKI_S3_ENDPOINT: z.url().optional(),
  AGENTPLANE_WIKI_S3_BUCKET: z.string().min(1).optional(),
  AGENTPLANE_WIKI_S3_REGION: z.string().min(1).default('us-east-1'),
  AGENTPLANE_WIKI_S3_ACCESS_KEY_ID: z.string().min(1).optional(),
  AGENTPLANE_WIKI_S3_SECRET_ACCESS_KEY: z.string().min(1).optional(),
  AGENTPLANE_LOCAL_SUBNET: z
    .string()
    .regex(/^(\d{1,3}\.){3}\d{1,3}\/(\d|[12]\d|30)$/, 'must be an IPv4 CIDR block, e.g. 10.231.0.0/16')
    .default('10.231.0.0/16'),
  // The computers' sandboxes bind paths under it word by word: no white space.
  AGENTPLANE_LOCAL_ROOT: z
    .string()
    .regex(/^\/\S*$/, 'must be an absolute path without white space')
    .optional(),
  AGENTPLANE_LOCAL_ALLOW: z
    .string()
    .default('')
    .transform((v, ctx) => {
      try {
        return parseLocalAllow(v);
      } catch (err) {
        ctx.addIssue({ code: 'custom', message: (err as Error).message });
        return z.NEVER;
      }
    }),
  AGENTPLANE_LOCAL_PIDS_MAX: z.coerce.number().int().min(16).default(1024),
  // Environments as code: the Pulumi packages templates' programs may use (each must be installed in the toolchain too).
  AGENTPLANE_PROGRAM_PROVIDERS: z
    .string()
    .regex(/^\s*[a-z0-9-]+(\s*,\s*[a-z0-9-]+)*\s*$/, 'must be Pulumi package names separated by commas, e.g. kubernetes,command')
    .default('kubernetes,command')
    .transform((v) => v.split(',').map((p) => p.trim())),
  AGENTPLANE_METRICS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  OTEL_EXPORTER_OTLP_ENDPOINT: z.url({ protocol: /^https?$/, message: 'must be an http(s) URL, e.g. http://otel-collector:4318' }).optional(),
  OTEL_SERVICE_NAME: z.string().min(1).default('agentplane'),
});

/** Forge connections seeded from configuration (the API at /api/v0/integrations/source-control holds the rest). */
const GitIntegrationsSchema = z.array(
  z.strictObject({
    organization: z.string().min(1),
    host: z
      .string()
      .min(1)
      .regex(/^[A-Za-z0-9.-]+(:\d+)?$/, 'host must be a host name, e.g. github.com'),
    username: z.string().min(1).default('x-access-token'),
    token: z.string().min(1),
    /** github (github.com, GitHub Enterprise Server) or gitea (Gitea, Forgejo); default: github for github.com, else gitea. */
    provider: z.enum(['github', 'gitea']).optional(),
    /** The forge's web address when it is not https://<host> (a path prefix, plain http). */
    baseUrl: z.url({ protocol: /^https?$/, message: 'baseUrl must be an http(s) URL' }).optional(),
  }),
);
export type GitIntegrationConfig = z.infer<typeof GitIntegrationsSchema>[number];

function parseGitIntegrations(raw: string | undefined): GitIntegrationConfig[] {
  if (!raw) return [];
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    throw new Error('invalid configuration: AGENTPLANE_GIT_INTEGRATIONS: must be a JSON array');
  }
  const parsed = GitIntegrationsSchema.safeParse(json);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `[${i.path.join('.')}] ${i.message}`).join('; ');
    throw new Error(`invalid configuration: AGENTPLANE_GIT_INTEGRATIONS: ${problems}`);
  }
  return parsed.data;
}

export type Config = ReturnType<typeof loadConfig>;

/** Reads the environment once into a typed config; a bad value stops start-up with its name. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env) {
  const parsed = EnvSchema.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new Error(`invalid configuration: ${problems}`);
  }
  const e = parsed.data;
  if (e.AGENTPLANE_JWT_JWKS_URL && (!e.AGENTPLANE_JWT_ISSUER || !e.AGENTPLANE_JWT_AUDIENCE)) {
    throw new Error('invalid configuration: AGENTPLANE_JWT_JWKS_URL needs AGENTPLANE_JWT_ISSUER and AGENTPLANE_JWT_AUDIENCE');
  }
  const sessionsOrgs = e.AGENTPLANE_SESSIONS_ORGS.trim();
  let egress;
  try {
    egress = parseEgressAllow(e.AGENTPLANE_EGRESS_ALLOW);
  } catch (err) {
    throw new Error(`invalid configuration: ${(err as Error).message}`);
  }
  return {
    port: e.PORT,
    host: e.AGENTPLANE_HOST,
    dataDir: path.resolve(e.AGENTPLANE_DATA_DIR),
    databaseUrl: e.DATABASE_URL,
    logLevel: e.AGENTPLANE_LOG_LEVEL,
    logFormat: e.AGENTPLANE_LOG_FORMAT,
    // Addresses tenants' URLs may reach although they are loopback, private or link-local.
    egress,
    bodyLimit: e.AGENTPLANE_BODY_LIMIT,
    shutdownTimeoutMs: e.AGENTPLANE_SHUTDOWN_TIMEOUT_MS,
    jwt: {
      secret: e.AGENTPLANE_JWT_SECRET,
      jwksUrl: e.AGENTPLANE_JWT_JWKS_URL,
      issuer: e.AGENTPLANE_JWT_ISSUER,
      audience: e.AGENTPLANE_JWT_AUDIENCE,
    },
    sessionsOrgs:
      sessionsOrgs === '*'
        ? ('*' as const)
        : new Set(
            sessionsOrgs
              .split(',')
              .map((s) => s.trim())
              .filter(Boolean),
          ),
    runWorker: e.AGENTPLANE_WORKER,
    bootstrap: { org: e.AGENTPLANE_BOOTSTRAP_ORG, email: e.AGENTPLANE_BOOTSTRAP_EMAIL },
    pulumiHome: e.AGENTPLANE_PULUMI_HOME,
    kubernetes: {
      namespace: e.AGENTPLANE_COMPUTERS_NAMESPACE,
      image: e.AGENTPLANE_K8S_COMPUTER_IMAGE,
      imagePullPolicy: e.AGENTPLANE_K8S_IMAGE_PULL_POLICY,
      // Unset: the cluster's default StorageClass.
      storageClassName: e.AGENTPLANE_K8S_STORAGE_CLASS,
      // Unset: the cluster's default runtime; set (e.g. gvisor, kata), computers' pods run in that sandbox runtime.
      runtimeClassName: e.AGENTPLANE_K8S_RUNTIME_CLASS,
      cpuRequestFraction: e.AGENTPLANE_K8S_CPU_REQUEST_FRACTION,
      memoryRequestFraction: e.AGENTPLANE_K8S_MEMORY_REQUEST_FRACTION,
      // Unset: the kubeconfig's current context (or the in-cluster service account).
      context: e.AGENTPLANE_K8S_CONTEXT,
    },
    encryptionKey: e.AGENTPLANE_ENCRYPTION_KEY,
    // Unset: agents reach the relay only through the API port (WebSocket); set, also on this SSH port.
    sshGateway: e.AGENTPLANE_SSH_GATEWAY_PORT === undefined ? undefined : { port: e.AGENTPLANE_SSH_GATEWAY_PORT },
    // Express's `trust proxy`: whose X-Forwarded-Proto and X-Forwarded-Host a request's own address is read from.
    trustProxy: trustProxy(e.AGENTPLANE_TRUST_PROXY),
    // The control plane's SSH connections to machines: one whose machine misses 3 keepalives in a row is dropped.
    sshKeepaliveMs: e.AGENTPLANE_SSH_KEEPALIVE_SECONDS * 1000,
    relay: {
      // Unset: the address each request was sent to (its Host, and X-Forwarded-* from trusted proxies),
      // else the server's own listening address; set it where machines reach another address than people.
      publicUrl: e.AGENTPLANE_PUBLIC_URL,
      // Routing between replicas needs a database they share: on by default with PostgreSQL only
      // (the embedded database serves one process).
      peer:
        e.AGENTPLANE_RELAY_PEER_PORT === undefined && !e.DATABASE_URL
          ? undefined
          : { port: e.AGENTPLANE_RELAY_PEER_PORT ?? 8081, advertisedHost: e.AGENTPLANE_RELAY_PEER_HOST ?? os.hostname() },
    },
    gitIntegrations: parseGitIntegrations(e.AGENTPLANE_GIT_INTEGRATIONS),
    appUrl: e.AGENTPLANE_APP_URL,
    wiki: {
      bounds: { maxFiles: e.AGENTPLANE_WIKI_MAX_FILES, maxBytes: e.AGENTPLANE_WIKI_MAX_BYTES },
      runTimeoutSeconds: e.AGENTPLANE_WIKI_RUN_TIMEOUT_SECONDS,
      uploadLimit: e.AGENTPLANE_WIKI_UPLOAD_LIMIT,
      videoMaxBytes: e.AGENTPLANE_WIKI_VIDEO_MAX_BYTES,
      // Unset: videos are kept in the data directory (one node); replicas need object storage.
      s3: e.AGENTPLANE_WIKI_S3_BUCKET
        ? {
            endpoint: e.AGENTPLANE_WIKI_S3_ENDPOINT,
            bucket: e.AGENTPLANE_WIKI_S3_BUCKET,
            region: e.AGENTPLANE_WIKI_S3_REGION,
            accessKeyId: e.AGENTPLANE_WIKI_S3_ACCESS_KEY_ID,
            secretAccessKey: e.AGENTPLANE_WIKI_S3_SECRET_ACCESS_KEY,
          }
        : undefined,
    },
    sessions: {
      // Per owner: sessions pending or running at once; creating one more answers 429.
      maxConcurrentSessions: e.AGENTPLANE_MAX_CONCURRENT_SESSIONS,
      // Days a deleted session stays restorable before the purge job removes it.
      retentionDays: e.AGENTPLANE_SESSION_RETENTION_DAYS,
      // A tool call waiting for approval this long expires: the model is told nobody answered.
      approvalTimeoutMs: e.AGENTPLANE_APPROVAL_TIMEOUT_SECONDS * 1000,
      // Agent turns this process runs at once (they mostly wait on models and tools); default sized by memory.
      turnConcurrency: e.AGENTPLANE_TURN_CONCURRENCY ?? defaultTurnConcurrency(),
      // Running turns at once across every replica, per organization and per owner; the rest wait, pending, in order.
      turnLimits: { perOrganization: e.AGENTPLANE_TURNS_PER_ORGANIZATION, perOwner: e.AGENTPLANE_TURNS_PER_OWNER },
      // The model a session that names none uses; unset: the first model of the models file.
      defaultModel: e.AGENTPLANE_DEFAULT_MODEL,
    },
    events: {
      // Stored events older than this are purged; a resume from before it is told so.
      retentionMs: e.AGENTPLANE_EVENTS_RETENTION_HOURS * 3_600_000,
      heartbeatMs: e.AGENTPLANE_EVENTS_HEARTBEAT_SECONDS * 1000,
      // Unsent bytes one stream client may owe before it is dropped (it reconnects and resumes).
      maxBufferedBytes: e.AGENTPLANE_EVENTS_CLIENT_BUFFER_BYTES,
      // Live events held for a stream while it replays stored ones.
      maxPendingEvents: 10_000,
      retryMs: 2_000,
    },
    webhooks: {
      // Delay before each retry after a failed attempt; the default spans about 27.5 hours.
      retryDelaysMs: e.AGENTPLANE_WEBHOOK_RETRY_SCHEDULE.split(',').map((v) => Math.round(Number(v) * 1000)),
      timeoutMs: e.AGENTPLANE_WEBHOOK_TIMEOUT_SECONDS * 1000,
      // Attempts in flight at once per endpoint, across every worker.
      endpointConcurrency: e.AGENTPLANE_WEBHOOK_ENDPOINT_CONCURRENCY,
      // An endpoint whose every attempt has failed for this long is disabled.
      disableAfterMs: e.AGENTPLANE_WEBHOOK_DISABLE_AFTER_HOURS * 3_600_000,
    },
    // Prometheus metrics on their own port, and OpenTelemetry traces over OTLP/HTTP: each off unless set.
    observability: { metricsPort: e.AGENTPLANE_METRICS_PORT, otlpEndpoint: e.OTEL_EXPORTER_OTLP_ENDPOINT, serviceName: e.OTEL_SERVICE_NAME },
    managed: {
      // Unset: file:// under the data directory, for a single machine; replicas need a shared backend.
      pulumiBackendUrl: e.AGENTPLANE_PULUMI_BACKEND_URL,
      // Unset: derived from the encryption key, which replicas already share.
      pulumiPassphrase: e.AGENTPLANE_PULUMI_PASSPHRASE,
      // Pulumi operations at once in this process (bulk creation runs this many in parallel).
      concurrency: e.AGENTPLANE_PROVISION_CONCURRENCY,
      provisionTimeoutMs: e.AGENTPLANE_PROVISION_TIMEOUT_SECONDS * 1000,
      // 0: never pause idle computers.
      idlePauseMs: e.AGENTPLANE_COMPUTER_IDLE_MINUTES * 60_000,
      resources: {
        cpus: e.AGENTPLANE_COMPUTER_CPUS,
        memoryMiB: e.AGENTPLANE_COMPUTER_MEMORY_MIB,
        diskGiB: e.AGENTPLANE_COMPUTER_DISK_GIB,
      },
      local: {
        enabled: e.AGENTPLANE_LOCAL_PROVIDER,
        subnet: e.AGENTPLANE_LOCAL_SUBNET,
        root: e.AGENTPLANE_LOCAL_ROOT ?? defaultLocalRoot(e.AGENTPLANE_DATA_DIR),
        allow: e.AGENTPLANE_LOCAL_ALLOW,
        pidsMax: e.AGENTPLANE_LOCAL_PIDS_MAX,
      },
      // The packages (providers) templates' Pulumi YAML programs may use.
      programProviders: e.AGENTPLANE_PROGRAM_PROVIDERS,
    },
  };
}

/** AGENTPLANE_TRUST_PROXY as Express's `trust proxy` value: off by default, so a client cannot name the address answers carry. */
function trustProxy(value: string | undefined): boolean | number | string {
  if (value === undefined || value === 'false') return false;
  if (value === 'true') return true;
  return /^\d+$/.test(value) ? Number(value) : value;
}

/** What one running turn may hold in memory at most (its history, streams, tool output), measured well above the median. */
const TURN_MEMORY_BYTES = 4 * 1024 * 1024;

/** Turns at once that half of the V8 heap limit holds, between 16 and 1,000. */
function defaultTurnConcurrency(): number {
  const heap = v8.getHeapStatistics().heap_size_limit;
  return Math.min(1000, Math.max(16, Math.floor(heap / 2 / TURN_MEMORY_BYTES)));
}
