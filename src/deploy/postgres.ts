import * as pulumi from '@pulumi/pulumi';
import k8s from '@pulumi/kubernetes';

export interface InClusterPostgresArgs {
  namespace: pulumi.Input<string>;
  image: string;
  storageSize: string;
  storageClassName?: string;
  password: pulumi.Input<string>;
  labels: Record<string, string>;
}

const DB = 'agentplane';
const USER = 'agentplane';
const PORT = 5432;

/** A single-instance PostgreSQL StatefulSet with a persistent volume, for small installs. */
export class InClusterPostgres extends pulumi.ComponentResource {
  readonly statefulSet: k8s.apps.v1.StatefulSet;
  readonly service: k8s.core.v1.Service;
  /** A secret output: the URL the control plane connects with. */
  readonly databaseUrl: pulumi.Output<string>;

  constructor(name: string, args: InClusterPostgresArgs, opts?: pulumi.ComponentResourceOptions) {
    super('agentplane:deploy:InClusterPostgres', name, {}, opts);
    const parent = { parent: this };
    const labels = { ...args.labels, 'app.kubernetes.io/component': 'postgres' };
    const secret = new k8s.core.v1.Secret(
      `${name}-credentials`,
      {
        metadata: { namespace: args.namespace, labels },
        type: 'Opaque',
        stringData: { POSTGRES_PASSWORD: args.password },
      },
      parent,
    );
    this.service = new k8s.core.v1.Service(
      name,
      {
        metadata: { name: 'agentplane-postgres', namespace: args.namespace, labels },
        spec: { clusterIP: 'None', selector: labels, ports: [{ name: 'postgres', port: PORT, targetPort: 'postgres' }] },
      },
      parent,
    );
    this.statefulSet = new k8s.apps.v1.StatefulSet(
      name,
      {
        metadata: { name: 'agentplane-postgres', namespace: args.namespace, labels },
        spec: {
          serviceName: this.service.metadata.name,
          replicas: 1,
          selector: { matchLabels: labels },
          template: {
            metadata: { labels },
            spec: {
              securityContext: { runAsUser: 999, runAsGroup: 999, fsGroup: 999, runAsNonRoot: true },
              containers: [
                {
                  name: 'postgres',
                  image: args.image,
                  ports: [{ name: 'postgres', containerPort: PORT }],
                  env: [
                    { name: 'POSTGRES_USER', value: USER },
                    { name: 'POSTGRES_DB', value: DB },
                    { name: 'PGDATA', value: '/var/lib/postgresql/data/pgdata' },
                    {
                      name: 'POSTGRES_PASSWORD',
                      valueFrom: { secretKeyRef: { name: secret.metadata.name, key: 'POSTGRES_PASSWORD' } },
                    },
                  ],
                  readinessProbe: {
                    exec: { command: ['pg_isready', '-U', USER, '-d', DB] },
                    periodSeconds: 5,
                    failureThreshold: 6,
                  },
                  livenessProbe: {
                    exec: { command: ['pg_isready', '-U', USER, '-d', DB] },
                    initialDelaySeconds: 30,
                    periodSeconds: 10,
                    failureThreshold: 6,
                  },
                  resources: { requests: { cpu: '100m', memory: '256Mi' }, limits: { cpu: '1', memory: '1Gi' } },
                  volumeMounts: [{ name: 'data', mountPath: '/var/lib/postgresql/data' }],
                },
              ],
            },
          },
          volumeClaimTemplates: [
            {
              metadata: { name: 'data' },
              spec: {
                accessModes: ['ReadWriteOnce'],
                storageClassName: args.storageClassName,
                resources: { requests: { storage: args.storageSize } },
              },
            },
          ],
        },
      },
      parent,
    );
    this.databaseUrl = pulumi.secret(
      pulumi
        .all([args.password, this.service.metadata.name, this.service.metadata.namespace])
        .apply(([password, host, ns]) => `postgresql://${USER}:${encodeURIComponent(password)}@${host}.${ns}.svc.cluster.local:${PORT}/${DB}`),
    );
    this.registerOutputs({ host: this.service.metadata.name });
  }
}
