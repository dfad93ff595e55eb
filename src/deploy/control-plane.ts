import * as pulumi from '@pulumi/pulumi';
import k8s from '@pulumi/kubernetes';
import { DATA_DIR, type Settings } from './settings.ts';

type Resources = Settings['resources'];
type EnvVar = k8s.types.input.core.v1.EnvVar;

export interface ControlPlaneArgs {
  namespace: pulumi.Input<string>;
  computersNamespace: pulumi.Input<string>;
  serviceAccountName: pulumi.Input<string>;
  image: string;
  imagePullPolicy: string;
  replicas: number;
  workerReplicas: number;
  resources: Resources;
  workerResources: Resources;
  /** Secret values, stored in one Kubernetes Secret and read by env references. */
  databaseUrl: pulumi.Input<string>;
  pulumiPassphrase: pulumi.Input<string>;
  encryptionKey: pulumi.Input<string>;
  jwtSecret?: pulumi.Input<string>;
  pulumiBackendUrl: string;
  logLevel: string;
  env: Record<string, string>;
  service: Settings['service'];
  ingress?: Settings['ingress'];
  labels: Record<string, string>;
  /** What must be ready before the migration Job runs (the in-cluster database). */
  migrateAfter?: pulumi.Input<pulumi.Resource>[];
}

const HTTP_PORT = 8080;
/** Where serving replicas reach each other's agent tunnels (src/relay/peer-server.ts); never in a Service. */
const RELAY_PEER_PORT = 8081;
/** GET /metrics of servers and workers (AGENTPLANE_METRICS_PORT): scraped by pod annotations, open to the cluster's pods only. */
const METRICS_PORT = 9090;
const METRICS_CONTAINER_PORT = { name: 'metrics', containerPort: METRICS_PORT };
/** The annotations Prometheus's usual Kubernetes pod discovery keeps (prometheus.io/scrape, port, path). */
const SCRAPE_ANNOTATIONS = { 'prometheus.io/scrape': 'true', 'prometheus.io/port': String(METRICS_PORT), 'prometheus.io/path': '/metrics' };

/**
 * Defaults for ingress-nginx, under the stack's own annotations: the relay's WebSockets (agents'
 * tunnels, `agentplane ssh`) live for hours, and the controller's default 60 s read timeout would
 * cut an idle one between keepalives of a slow client. WebSocket upgrades need no annotation there.
 */
const INGRESS_DEFAULTS: Record<string, string> = {
  'nginx.ingress.kubernetes.io/proxy-read-timeout': '3600',
  'nginx.ingress.kubernetes.io/proxy-send-timeout': '3600',
};

/**
 * The control plane: its Secret, the migration Job, the server Deployment (with its
 * PodDisruptionBudget, Service and optional Ingress) and the optional worker Deployment.
 * Both Deployments wait for the migration Job, so new replicas only start on a migrated schema.
 */
export class ControlPlane extends pulumi.ComponentResource {
  readonly secret: k8s.core.v1.Secret;
  readonly migration: k8s.batch.v1.Job;
  readonly deployment: k8s.apps.v1.Deployment;
  readonly disruptionBudget: k8s.policy.v1.PodDisruptionBudget;
  readonly service: k8s.core.v1.Service;
  readonly ingress?: k8s.networking.v1.Ingress;
  readonly peerPolicy: k8s.networking.v1.NetworkPolicy;
  readonly worker?: k8s.apps.v1.Deployment;
  readonly dataVolume?: k8s.core.v1.PersistentVolumeClaim;
  readonly apiUrl: pulumi.Output<string>;

  constructor(name: string, args: ControlPlaneArgs, opts?: pulumi.ComponentResourceOptions) {
    super('agentplane:deploy:ControlPlane', name, {}, opts);
    const parent = { parent: this };
    const ns = args.namespace;
    const fileBackend = args.pulumiBackendUrl.startsWith('file://');

    // Auto-named: a changed value replaces the Secret under a new name, which rolls the pods.
    this.secret = new k8s.core.v1.Secret(
      name,
      {
        metadata: { namespace: ns, labels: args.labels },
        type: 'Opaque',
        stringData: {
          DATABASE_URL: args.databaseUrl,
          PULUMI_CONFIG_PASSPHRASE: args.pulumiPassphrase,
          AGENTPLANE_ENCRYPTION_KEY: args.encryptionKey,
          ...(args.jwtSecret === undefined ? {} : { AGENTPLANE_JWT_SECRET: args.jwtSecret }),
        },
      },
      parent,
    );
    const fromSecret = (key: string): EnvVar => ({
      name: key,
      valueFrom: { secretKeyRef: { name: this.secret.metadata.name, key } },
    });
    const ingress = args.ingress;
    // What agents and `agentplane ssh` are told to dial (relayAgentUrl, relayClientUrl).
    this.apiUrl = ingress
      ? pulumi.output(`${ingress.tlsSecretName ? 'https' : 'http'}://${ingress.host}`)
      : pulumi.interpolate`http://agentplane.${ns}.svc.cluster.local:${args.service.port}`;
    // Serving replicas hold agents' tunnels: each tells the others its own pod address, by the lease table.
    const relayEnv: EnvVar[] = [
      { name: 'AGENTPLANE_PUBLIC_URL', value: this.apiUrl },
      { name: 'AGENTPLANE_RELAY_PEER_PORT', value: String(RELAY_PEER_PORT) },
      { name: 'AGENTPLANE_RELAY_PEER_HOST', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
    ];
    const env = (runWorker: boolean, serving = false): EnvVar[] => [
      { name: 'PORT', value: String(HTTP_PORT) },
      { name: 'AGENTPLANE_HOST', value: '0.0.0.0' },
      { name: 'AGENTPLANE_DATA_DIR', value: DATA_DIR },
      { name: 'AGENTPLANE_LOG_LEVEL', value: args.logLevel },
      { name: 'AGENTPLANE_WORKER', value: String(runWorker) },
      { name: 'AGENTPLANE_METRICS_PORT', value: String(METRICS_PORT) },
      { name: 'AGENTPLANE_COMPUTERS_NAMESPACE', value: args.computersNamespace },
      { name: 'PULUMI_BACKEND_URL', value: args.pulumiBackendUrl },
      fromSecret('DATABASE_URL'),
      fromSecret('PULUMI_CONFIG_PASSPHRASE'),
      fromSecret('AGENTPLANE_ENCRYPTION_KEY'),
      ...(args.jwtSecret === undefined ? [] : [fromSecret('AGENTPLANE_JWT_SECRET')]),
      ...(serving ? relayEnv : []),
      ...Object.entries(args.env).map(([k, v]) => ({ name: k, value: v })),
    ];

    if (fileBackend) {
      this.dataVolume = new k8s.core.v1.PersistentVolumeClaim(
        `${name}-data`,
        {
          metadata: { name: 'agentplane-data', namespace: ns, labels: args.labels },
          spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '5Gi' } } },
        },
        parent,
      );
    }
    const dataVolume: k8s.types.input.core.v1.Volume = this.dataVolume
      ? { name: 'data', persistentVolumeClaim: { claimName: this.dataVolume.metadata.name } }
      : { name: 'data', emptyDir: {} };

    const podSecurity = {
      runAsNonRoot: true,
      runAsUser: 10001,
      runAsGroup: 10001,
      fsGroup: 10001,
      seccompProfile: { type: 'RuntimeDefault' },
    };
    // The root file system stays writable: the Pulumi CLI writes plugin locks into its PULUMI_HOME.
    const containerSecurity = { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } };
    const podSpec = (
      command: string,
      runWorker: boolean,
      resources: Resources,
      extra: Partial<k8s.types.input.core.v1.Container>,
      restartPolicy?: string,
      serving = false,
    ): k8s.types.input.core.v1.PodSpec => ({
      serviceAccountName: args.serviceAccountName,
      securityContext: podSecurity,
      restartPolicy,
      terminationGracePeriodSeconds: 45,
      containers: [
        {
          name: 'agentplane',
          image: args.image,
          imagePullPolicy: args.imagePullPolicy,
          // args, not command: the image's entrypoint (tini) stays PID 1 and reaps Pulumi's children.
          args: ['node', 'bin/agentplane.js', command],
          env: env(runWorker, serving),
          resources,
          securityContext: containerSecurity,
          volumeMounts: [{ name: 'data', mountPath: DATA_DIR }],
          ...extra,
        },
      ],
      volumes: [dataVolume],
    });

    // Replaced (under a new name) whenever the image or the env changes: every release migrates first.
    this.migration = new k8s.batch.v1.Job(
      `${name}-migrate`,
      {
        metadata: { namespace: ns, labels: { ...args.labels, 'app.kubernetes.io/component': 'migrate' } },
        spec: {
          backoffLimit: 4,
          activeDeadlineSeconds: 600,
          template: {
            metadata: { labels: { ...args.labels, 'app.kubernetes.io/component': 'migrate' } },
            spec: podSpec('migrate', false, args.resources, {}, 'OnFailure'),
          },
        },
      },
      { ...parent, deleteBeforeReplace: true, dependsOn: args.migrateAfter ?? [] },
    );

    const serverLabels = { ...args.labels, 'app.kubernetes.io/component': 'server' };
    const probe = (path: string, periodSeconds: number, failureThreshold: number) => ({
      httpGet: { path, port: 'http' },
      periodSeconds,
      failureThreshold,
      timeoutSeconds: 3,
    });
    this.deployment = new k8s.apps.v1.Deployment(
      name,
      {
        metadata: { name: 'agentplane', namespace: ns, labels: serverLabels },
        spec: {
          replicas: args.replicas,
          selector: { matchLabels: serverLabels },
          // A ReadWriteOnce data volume cannot be mounted by a surge pod on another node.
          strategy: fileBackend ? { type: 'Recreate' } : { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } },
          template: {
            metadata: { labels: serverLabels, annotations: SCRAPE_ANNOTATIONS },
            spec: podSpec(
              'serve',
              args.workerReplicas === 0,
              args.resources,
              {
                ports: [{ name: 'http', containerPort: HTTP_PORT }, { name: 'relay-peer', containerPort: RELAY_PEER_PORT }, METRICS_CONTAINER_PORT],
                startupProbe: probe('/healthz', 2, 60),
                livenessProbe: probe('/healthz', 10, 3),
                readinessProbe: probe('/readyz', 5, 2),
              },
              undefined,
              true,
            ),
          },
        },
      },
      { ...parent, dependsOn: [this.migration] },
    );

    this.disruptionBudget = new k8s.policy.v1.PodDisruptionBudget(
      name,
      {
        metadata: { name: 'agentplane', namespace: ns, labels: serverLabels },
        // maxUnavailable, not minAvailable: a single replica must not block node drains forever.
        spec: { maxUnavailable: 1, selector: { matchLabels: serverLabels } },
      },
      parent,
    );

    this.service = new k8s.core.v1.Service(
      name,
      {
        metadata: { name: 'agentplane', namespace: ns, labels: serverLabels },
        spec: {
          type: args.service.type,
          selector: serverLabels,
          ports: [{ name: 'http', port: args.service.port, targetPort: 'http' }],
        },
      },
      parent,
    );

    // The peer port answers only agentplane's own pods (servers and workers reach tunnels through
    // it); the API port stays open to the Service and the Ingress controller. Where the cluster's
    // network plugin enforces no policies, the peer tokens still do.
    const instanceLabels = {
      'app.kubernetes.io/name': args.labels['app.kubernetes.io/name']!,
      'app.kubernetes.io/instance': args.labels['app.kubernetes.io/instance']!,
    };
    this.peerPolicy = new k8s.networking.v1.NetworkPolicy(
      `${name}-relay-peers`,
      {
        metadata: { name: 'agentplane-relay-peers', namespace: ns, labels: serverLabels },
        spec: {
          podSelector: { matchLabels: serverLabels },
          policyTypes: ['Ingress'],
          ingress: [
            { ports: [{ port: 'http' }] },
            { from: [{ podSelector: { matchLabels: instanceLabels } }], ports: [{ port: 'relay-peer' }] },
            // Metrics: any pod of the cluster (its Prometheus), nothing from outside it.
            { from: [{ namespaceSelector: {} }], ports: [{ port: 'metrics' }] },
          ],
        },
      },
      parent,
    );

    if (ingress) {
      this.ingress = new k8s.networking.v1.Ingress(
        name,
        {
          metadata: { name: 'agentplane', namespace: ns, labels: serverLabels, annotations: { ...INGRESS_DEFAULTS, ...ingress.annotations } },
          spec: {
            ingressClassName: ingress.className,
            tls: ingress.tlsSecretName ? [{ hosts: [ingress.host], secretName: ingress.tlsSecretName }] : undefined,
            rules: [
              {
                host: ingress.host,
                http: {
                  paths: [
                    {
                      path: '/',
                      pathType: 'Prefix',
                      backend: { service: { name: this.service.metadata.name, port: { name: 'http' } } },
                    },
                  ],
                },
              },
            ],
          },
        },
        parent,
      );
    }

    if (args.workerReplicas > 0) {
      const workerLabels = { ...args.labels, 'app.kubernetes.io/component': 'worker' };
      this.worker = new k8s.apps.v1.Deployment(
        `${name}-worker`,
        {
          metadata: { name: 'agentplane-worker', namespace: ns, labels: workerLabels },
          spec: {
            replicas: args.workerReplicas,
            selector: { matchLabels: workerLabels },
            strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } },
            template: {
              metadata: { labels: workerLabels, annotations: SCRAPE_ANNOTATIONS },
              spec: podSpec('worker', true, args.workerResources, { ports: [METRICS_CONTAINER_PORT] }),
            },
          },
        },
        { ...parent, dependsOn: [this.migration] },
      );
    }

    this.registerOutputs({ apiUrl: this.apiUrl });
  }
}
