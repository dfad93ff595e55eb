import { hkdfSync } from 'node:crypto';
import * as pulumi from '@pulumi/pulumi';
import k8s from '@pulumi/kubernetes';
import { ComputerRbac } from './rbac.ts';
import { ControlPlane } from './control-plane.ts';
import { InClusterPostgres } from './postgres.ts';
import type { Settings } from './settings.ts';

/** The validated stack settings; secrets among them are wrapped as secret outputs here. */
export type AgentplaneArgs = Settings;

/** Everything one agentplane environment needs on a cluster. */
export class Agentplane extends pulumi.ComponentResource {
  readonly namespace: k8s.core.v1.Namespace;
  readonly computersNamespace: k8s.core.v1.Namespace;
  readonly rbac: ComputerRbac;
  readonly postgres?: InClusterPostgres;
  readonly controlPlane: ControlPlane;
  readonly apiUrl: pulumi.Output<string>;
  /** How to get the first owner's API key. */
  readonly firstApiKey: pulumi.Output<string>;

  constructor(name: string, args: AgentplaneArgs, opts?: pulumi.ComponentResourceOptions) {
    super('agentplane:deploy:Agentplane', name, {}, opts);
    const parent = { parent: this };
    const labels = { 'app.kubernetes.io/name': 'agentplane', 'app.kubernetes.io/instance': name };

    this.namespace = new k8s.core.v1.Namespace(name, { metadata: { name: args.namespace, labels } }, parent);
    this.computersNamespace = new k8s.core.v1.Namespace(
      `${name}-computers`,
      { metadata: { name: args.computersNamespace, labels: { ...labels, 'app.kubernetes.io/component': 'computers' } } },
      parent,
    );
    const ns = this.namespace.metadata.name;

    this.rbac = new ComputerRbac(`${name}-rbac`, { namespace: ns, computersNamespace: this.computersNamespace.metadata.name, labels }, parent);

    let databaseUrl: pulumi.Input<string>;
    if (args.database === 'in-cluster') {
      this.postgres = new InClusterPostgres(
        `${name}-postgres`,
        {
          namespace: ns,
          image: args.postgres.image,
          storageSize: args.postgres.storageSize,
          storageClassName: args.postgres.storageClassName,
          password: pulumi.secret(args.postgresPassword ?? ''),
          labels,
        },
        parent,
      );
      databaseUrl = this.postgres.databaseUrl;
    } else {
      databaseUrl = pulumi.secret(args.databaseUrl ?? '');
    }

    this.controlPlane = new ControlPlane(
      name,
      {
        namespace: ns,
        computersNamespace: this.computersNamespace.metadata.name,
        serviceAccountName: this.rbac.serviceAccount.metadata.name,
        image: args.image,
        imagePullPolicy: args.imagePullPolicy,
        replicas: args.replicas,
        workerReplicas: args.workerReplicas,
        resources: args.resources,
        workerResources: args.workerResources,
        databaseUrl,
        pulumiPassphrase: pulumi.secret(args.pulumiPassphrase),
        encryptionKey: pulumi.secret(args.encryptionKey ?? derivedEncryptionKey(args.pulumiPassphrase)),
        jwtSecret: args.jwtSecret === undefined ? undefined : pulumi.secret(args.jwtSecret),
        pulumiBackendUrl: args.pulumiBackendUrl,
        logLevel: args.logLevel,
        env: args.env,
        service: args.service,
        ingress: args.ingress,
        labels,
        // The database must accept connections before the migration Job runs.
        migrateAfter: this.postgres ? [this.postgres.statefulSet] : [],
      },
      parent,
    );

    this.apiUrl = this.controlPlane.apiUrl;
    this.firstApiKey = pulumi.interpolate`The first start prints the owner's API key once in the server log: kubectl -n ${ns} logs -l app.kubernetes.io/component=server --tail=-1 | grep -A1 'API key'. Or issue one: kubectl -n ${ns} exec deploy/agentplane -- node bin/agentplane.js bootstrap --org default --email owner@agentplane.local --new-key`;
    this.registerOutputs({ apiUrl: this.apiUrl, firstApiKey: this.firstApiKey });
  }
}

/**
 * Every pod must share one encryption key: stored secrets (organization SSH keys, the relay's host
 * key) are sealed with it and relay peers authenticate each other with a key derived from it. Without
 * an `encryptionKey` setting, one is derived from the passphrase the stack already keeps secret, so
 * it is stable across releases. Either one must then stay as it is: a different key cannot open
 * what the old one sealed.
 */
function derivedEncryptionKey(passphrase: string): string {
  return Buffer.from(hkdfSync('sha256', passphrase, Buffer.alloc(0), 'agentplane deploy encryption key', 32)).toString('base64');
}
