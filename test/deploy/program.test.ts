import { describe, it, expect } from 'vitest';
import { deploy, loadSettings } from '../../src/deploy/program.ts';
import { SettingsError } from '../../src/deploy/settings.ts';
import { byType, one, secretValue, stackConfig, TEST_SECRETS, underMocks, type Registered } from './stack-harness.ts';

const K = {
  ns: 'kubernetes:core/v1:Namespace',
  deploy: 'kubernetes:apps/v1:Deployment',
  sts: 'kubernetes:apps/v1:StatefulSet',
  job: 'kubernetes:batch/v1:Job',
  secret: 'kubernetes:core/v1:Secret',
  svc: 'kubernetes:core/v1:Service',
  ing: 'kubernetes:networking.k8s.io/v1:Ingress',
  pdb: 'kubernetes:policy/v1:PodDisruptionBudget',
  netpol: 'kubernetes:networking.k8s.io/v1:NetworkPolicy',
  sa: 'kubernetes:core/v1:ServiceAccount',
  role: 'kubernetes:rbac.authorization.k8s.io/v1:Role',
  binding: 'kubernetes:rbac.authorization.k8s.io/v1:RoleBinding',
  clusterRole: 'kubernetes:rbac.authorization.k8s.io/v1:ClusterRole',
  pvc: 'kubernetes:core/v1:PersistentVolumeClaim',
};

function withSecrets(stack: string, secrets: Partial<typeof TEST_SECRETS>) {
  const config = stackConfig(stack);
  for (const [k, v] of Object.entries(secrets)) config[`agentplane:${k}`] = v;
  return { config, secretKeys: Object.keys(secrets).map((k) => `agentplane:${k}`) };
}

async function runStack(stack: string, secrets: Partial<typeof TEST_SECRETS>) {
  const { config, secretKeys } = withSecrets(stack, secrets);
  const { resources, result } = await underMocks(config, secretKeys, () => deploy());
  return { resources, outputs: result };
}

const devSecrets = { pulumiPassphrase: TEST_SECRETS.pulumiPassphrase, postgresPassword: TEST_SECRETS.postgresPassword };
const prodSecrets = {
  pulumiPassphrase: TEST_SECRETS.pulumiPassphrase,
  databaseUrl: TEST_SECRETS.databaseUrl,
  jwtSecret: TEST_SECRETS.jwtSecret,
};

const container = (r: Registered) => r.inputs.spec.template.spec.containers[0];
const envOf = (r: Registered) => new Map<string, any>(container(r).env.map((e: any) => [e.name, e]));
const urnOf = (resources: Registered[], type: string, name?: string) => one(resources, type, name).urn;
const resolve = <T>(o: { apply: (f: (v: T) => void) => unknown }) => new Promise<T>((r) => o.apply(r));

describe('deploy program: dev stack', async () => {
  const { resources, outputs } = await runStack('dev', devSecrets);
  const server = one(resources, K.deploy, 'agentplane');

  it('creates one server replica, an in-cluster PostgreSQL with a volume, and no worker', () => {
    expect(server.inputs.spec.replicas).toBe(1);
    expect(byType(resources, K.deploy)).toHaveLength(1);
    expect(envOf(server).get('AGENTPLANE_WORKER').value).toBe('true');
    const pg = one(resources, K.sts, 'agentplane-postgres');
    expect(pg.inputs.spec.volumeClaimTemplates[0].spec.resources.requests.storage).toBe('5Gi');
    expect(pg.inputs.metadata.namespace).toBe('agentplane-dev');
  });

  it('points DATABASE_URL at the in-cluster PostgreSQL with the url-encoded password, through the Secret', () => {
    const secret = one(resources, K.secret, 'agentplane');
    const data = secretValue(secret.inputs.stringData);
    expect(data.DATABASE_URL).toBe(
      `postgresql://agentplane:${encodeURIComponent(TEST_SECRETS.postgresPassword)}@agentplane-postgres.agentplane-dev.svc.cluster.local:5432/agentplane`,
    );
    expect(data.PULUMI_CONFIG_PASSPHRASE).toBe(TEST_SECRETS.pulumiPassphrase);
    expect(data.AGENTPLANE_JWT_SECRET).toBeUndefined();
    for (const key of ['DATABASE_URL', 'PULUMI_CONFIG_PASSPHRASE']) {
      expect(envOf(server).get(key)).toEqual({ name: key, valueFrom: { secretKeyRef: { name: 'agentplane-x1y2z3', key } } });
    }
    expect(envOf(server).has('AGENTPLANE_JWT_SECRET')).toBe(false);
  });

  it('keeps file:// Pulumi state on a persistent volume and replaces the pod instead of surging', () => {
    expect(envOf(server).get('PULUMI_BACKEND_URL').value).toBe('file:///var/lib/agentplane/pulumi');
    const pvc = one(resources, K.pvc, 'agentplane-data');
    expect(server.inputs.spec.template.spec.volumes).toContainEqual({
      name: 'data',
      persistentVolumeClaim: { claimName: pvc.inputs.metadata.name },
    });
    expect(server.inputs.spec.strategy).toEqual({ type: 'Recreate' });
  });

  it('migrates before the server starts, and starts after PostgreSQL', () => {
    const job = one(resources, K.job);
    expect(container(job).args).toEqual(['node', 'bin/agentplane.js', 'migrate']);
    expect(job.inputs.spec.template.spec.restartPolicy).toBe('OnFailure');
    expect(server.dependencies).toContain(job.urn);
    expect(job.dependencies).toContain(urnOf(resources, K.sts, 'agentplane-postgres'));
  });

  it('outputs the in-cluster API URL and how to get the first key', async () => {
    expect(await resolve<string>(outputs.apiUrl)).toBe('http://agentplane.agentplane-dev.svc.cluster.local:80');
    const hint = await resolve<string>(outputs.firstApiKey);
    expect(hint).toContain('kubectl -n agentplane-dev logs');
    expect(hint).toContain('node bin/agentplane.js bootstrap');
  });
});

describe('deploy program: prod stack', async () => {
  const { resources, outputs } = await runStack('prod', prodSecrets);
  const server = one(resources, K.deploy, 'agentplane');
  const worker = one(resources, K.deploy, 'agentplane-worker');
  const job = one(resources, K.job);

  it('runs three serving replicas that leave jobs to two workers', () => {
    expect(server.inputs.spec.replicas).toBe(3);
    expect(container(server).args).toEqual(['node', 'bin/agentplane.js', 'serve']);
    expect(envOf(server).get('AGENTPLANE_WORKER').value).toBe('false');
    expect(worker.inputs.spec.replicas).toBe(2);
    expect(container(worker).args).toEqual(['node', 'bin/agentplane.js', 'worker']);
    expect(container(worker).resources.limits).toEqual({ cpu: '4', memory: '4Gi' });
    expect(worker.dependencies).toContain(job.urn);
    expect(server.dependencies).toContain(job.urn);
  });

  it('uses the external database and object-storage state, with no PostgreSQL of its own', () => {
    expect(byType(resources, K.sts)).toHaveLength(0);
    expect(byType(resources, K.pvc)).toHaveLength(0);
    const secret = one(resources, K.secret);
    expect(secretValue(secret.inputs.stringData)).toEqual({
      DATABASE_URL: TEST_SECRETS.databaseUrl,
      PULUMI_CONFIG_PASSPHRASE: TEST_SECRETS.pulumiPassphrase,
      AGENTPLANE_JWT_SECRET: TEST_SECRETS.jwtSecret,
      AGENTPLANE_ENCRYPTION_KEY: expect.any(String),
    });
    for (const d of [server, worker, job]) {
      expect(envOf(d).get('PULUMI_BACKEND_URL').value).toBe('s3://agentplane-pulumi-state?region=eu-west-1');
      expect(envOf(d).get('AGENTPLANE_JWT_SECRET').valueFrom.secretKeyRef).toEqual({ name: 'agentplane-x1y2z3', key: 'AGENTPLANE_JWT_SECRET' });
    }
  });

  it('probes /readyz and /healthz, bounds resources, rolls without losing capacity, and has a PDB', () => {
    const c = container(server);
    expect(c.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'http' });
    expect(c.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'http' });
    expect(c.resources).toEqual({ requests: { cpu: '500m', memory: '1Gi' }, limits: { cpu: '2', memory: '2Gi' } });
    expect(server.inputs.spec.strategy).toEqual({ type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } });
    const pdb = one(resources, K.pdb);
    expect(pdb.inputs.spec).toEqual({ maxUnavailable: 1, selector: server.inputs.spec.selector });
    expect(server.inputs.spec.template.spec.securityContext.runAsNonRoot).toBe(true);
  });

  it('exposes the Service through a TLS Ingress and outputs its URL', async () => {
    const svc = one(resources, K.svc, 'agentplane');
    expect(svc.inputs.spec.selector).toEqual(server.inputs.spec.selector.matchLabels);
    const ing = one(resources, K.ing);
    expect(ing.inputs.spec.ingressClassName).toBe('nginx');
    expect(ing.inputs.spec.tls).toEqual([{ hosts: ['agentplane.example.com'], secretName: 'agentplane-tls' }]);
    expect(ing.inputs.spec.rules[0].http.paths[0].backend.service.name).toBe('agentplane');
    expect(await resolve<string>(outputs.apiUrl)).toBe('https://agentplane.example.com');
  });

  it('serves the relay through the same Service and Ingress: WebSocket upgrades on the API port, long idle timeouts', () => {
    const ing = one(resources, K.ing);
    expect(ing.inputs.spec.rules[0].http.paths).toEqual([
      { path: '/', pathType: 'Prefix', backend: { service: { name: 'agentplane', port: { name: 'http' } } } },
    ]);
    expect(ing.inputs.metadata.annotations).toMatchObject({
      'nginx.ingress.kubernetes.io/proxy-read-timeout': '3600',
      'nginx.ingress.kubernetes.io/proxy-send-timeout': '3600',
    });
    // Agents and people are told the public address: relayAgentUrl is wss://agentplane.example.com/api/v0/relay/agent.
    expect(envOf(server).get('AGENTPLANE_PUBLIC_URL').value).toBe('https://agentplane.example.com');
    // The peer port is no Service's: only the API port is exposed.
    const svc = one(resources, K.svc, 'agentplane');
    expect(svc.inputs.spec.ports).toEqual([{ name: 'http', port: 80, targetPort: 'http' }]);
  });

  it('lets replicas reach each other: pod address by the downward API, the peer port open to agentplane pods only', () => {
    expect(container(server).ports).toContainEqual({ name: 'relay-peer', containerPort: 8081 });
    expect(envOf(server).get('AGENTPLANE_RELAY_PEER_PORT').value).toBe('8081');
    expect(envOf(server).get('AGENTPLANE_RELAY_PEER_HOST')).toEqual({
      name: 'AGENTPLANE_RELAY_PEER_HOST',
      valueFrom: { fieldRef: { fieldPath: 'status.podIP' } },
    });
    // Workers hold no tunnels: they reach them through the servers and listen on no peer port.
    expect(envOf(worker).has('AGENTPLANE_RELAY_PEER_HOST')).toBe(false);
    const policy = one(resources, K.netpol);
    expect(policy.inputs.spec.podSelector).toEqual(server.inputs.spec.selector);
    expect(policy.inputs.spec.ingress).toEqual([
      { ports: [{ port: 'http' }] },
      {
        from: [{ podSelector: { matchLabels: { 'app.kubernetes.io/name': 'agentplane', 'app.kubernetes.io/instance': 'agentplane' } } }],
        ports: [{ port: 'relay-peer' }],
      },
      { from: [{ namespaceSelector: {} }], ports: [{ port: 'metrics' }] },
    ]);
    const workerLabels = worker.inputs.spec.template.metadata.labels;
    expect(workerLabels).toMatchObject(policy.inputs.spec.ingress[1].from[0].podSelector.matchLabels);
  });

  it('serves metrics on their own port to the cluster only, and annotates the pods for scraping', () => {
    for (const d of [server, worker]) {
      expect(envOf(d).get('AGENTPLANE_METRICS_PORT').value).toBe('9090');
      expect(container(d).ports).toContainEqual({ name: 'metrics', containerPort: 9090 });
      expect(d.inputs.spec.template.metadata.annotations).toEqual({
        'prometheus.io/scrape': 'true',
        'prometheus.io/port': '9090',
        'prometheus.io/path': '/metrics',
      });
    }
    // Never through the API's Service or Ingress.
    for (const svc of byType(resources, K.svc)) expect(JSON.stringify(svc.inputs.spec.ports)).not.toContain('metrics');
    expect(JSON.stringify(one(resources, K.ing).inputs.spec)).not.toContain('metrics');
  });

  it('gives every pod the same encryption key from the Secret (stored secrets and peer tokens depend on it)', () => {
    const secret = one(resources, K.secret);
    const key = secretValue(secret.inputs.stringData).AGENTPLANE_ENCRYPTION_KEY as string;
    expect(Buffer.from(key, 'base64')).toHaveLength(32);
    for (const d of [server, worker, job]) {
      expect(envOf(d).get('AGENTPLANE_ENCRYPTION_KEY').valueFrom.secretKeyRef).toEqual({ name: 'agentplane-x1y2z3', key: 'AGENTPLANE_ENCRYPTION_KEY' });
    }
  });

  it('grants the ServiceAccount only a Role in the computers namespace', () => {
    expect(byType(resources, K.clusterRole)).toHaveLength(0);
    const sa = one(resources, K.sa);
    const role = one(resources, K.role);
    const binding = one(resources, K.binding);
    expect(sa.inputs.metadata.namespace).toBe('agentplane');
    expect(role.inputs.metadata.namespace).toBe('agentplane-computers');
    expect(binding.inputs.metadata.namespace).toBe('agentplane-computers');
    expect(binding.inputs.subjects).toEqual([{ kind: 'ServiceAccount', name: 'agentplane', namespace: 'agentplane' }]);
    expect(binding.inputs.roleRef).toEqual({ apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'agentplane-computers' });
    const granted = (group: string) =>
      role.inputs.rules
        .filter((r: any) => r.apiGroups.includes(group))
        .flatMap((r: any) => r.resources)
        .sort();
    expect(granted('')).toEqual(['events', 'persistentvolumeclaims', 'pods', 'pods/exec', 'pods/log', 'secrets', 'services']);
    expect(granted('apps')).toEqual(['statefulsets']);
    expect(role.inputs.rules.every((r: any) => r.apiGroups.length === 1 && ['', 'apps'].includes(r.apiGroups[0]))).toBe(true);
    expect(role.inputs.rules.find((r: any) => r.resources.includes('events')).verbs).toEqual(['get', 'list', 'watch']);
    for (const d of [server, worker]) expect(d.inputs.spec.template.spec.serviceAccountName).toBe('agentplane');
    expect(envOf(server).get('AGENTPLANE_COMPUTERS_NAMESPACE').value).toBe('agentplane-computers');
    expect(
      byType(resources, K.ns)
        .map((n) => n.inputs.metadata.name)
        .sort(),
    ).toEqual(['agentplane', 'agentplane-computers']);
  });
});

describe('deploy settings validation', () => {
  async function problems(stack: string, secrets: Record<string, string>, overrides: Record<string, string> = {}) {
    const { config, secretKeys } = withSecrets(stack, secrets);
    Object.assign(config, overrides);
    let created = 0;
    try {
      const { resources } = await underMocks(config, secretKeys, () => deploy());
      created = resources.length;
    } catch (err) {
      expect(err).toBeInstanceOf(SettingsError);
      return (err as SettingsError).problems;
    }
    throw new Error(`no SettingsError; ${created} resources created`);
  }

  it('accepts both example stacks', async () => {
    const { config, secretKeys } = withSecrets('prod', prodSecrets);
    const settings = await underMocks(config, secretKeys, () => loadSettings());
    expect(settings.result.replicas).toBe(3);
  });

  it('requires the external database URL, as a secret', async () => {
    expect(await problems('prod', { pulumiPassphrase: TEST_SECRETS.pulumiPassphrase })).toEqual([
      expect.stringMatching(/^agentplane:databaseUrl: is required with database "external"/),
    ]);
    const { config } = withSecrets('prod', prodSecrets);
    const plain = await underMocks(config, ['agentplane:pulumiPassphrase', 'agentplane:jwtSecret'], () => {
      try {
        return loadSettings();
      } catch (err) {
        return err;
      }
    });
    expect((plain.result as SettingsError).problems).toEqual(['agentplane:databaseUrl: must be stored encrypted: pulumi config set --secret databaseUrl ...']);
  });

  it('refuses file:// state with several replicas, and names every bad setting at once', async () => {
    const found = await problems('dev', devSecrets, {
      'agentplane:replicas': '2',
      'agentplane:namespace': 'Bad_Name',
      'agentplane:resources': JSON.stringify({ requests: { cpu: 'lots', memory: '1Gi' }, limits: { cpu: '1', memory: '1Gi' } }),
      'agentplane:replicass': '3',
      'agentplane:env': JSON.stringify({ DATABASE_URL: 'postgres://x' }),
    });
    expect(found).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^agentplane:namespace: must be a DNS label/),
        expect.stringMatching(/^agentplane:resources\.requests\.cpu: must be a CPU quantity/),
        'agentplane:(settings): unknown setting(s) replicass',
      ]),
    );
  });

  it('checks cross-setting rules', async () => {
    expect(await problems('dev', devSecrets, { 'agentplane:replicas': '2' })).toEqual([
      expect.stringMatching(/^agentplane:pulumiBackendUrl: file:\/\/ state is local to one pod/),
    ]);
    expect(await problems('dev', devSecrets, { 'agentplane:env': JSON.stringify({ DATABASE_URL: 'postgres://x' }) })).toEqual([
      'agentplane:env: DATABASE_URL is set by the deploy program; use its setting instead',
    ]);
    expect(await problems('dev', devSecrets, { 'agentplane:computersNamespace': 'agentplane-dev' })).toEqual([
      expect.stringMatching(/^agentplane:computersNamespace: must differ from namespace/),
    ]);
    expect(await problems('dev', { pulumiPassphrase: TEST_SECRETS.pulumiPassphrase })).toEqual([
      expect.stringMatching(/^agentplane:postgresPassword: is required with database "in-cluster"/),
    ]);
    expect(await problems('prod', { ...prodSecrets, jwtSecret: 'short' })).toEqual(['agentplane:jwtSecret: must be at least 32 characters']);
  });

  it('touches no resource when a setting is bad', async () => {
    const { config, secretKeys } = withSecrets('dev', devSecrets);
    config['agentplane:workerReplicas'] = '-1';
    const run = await underMocks(config, secretKeys, () => {
      try {
        deploy();
      } catch (err) {
        return err;
      }
    });
    expect(run.result).toBeInstanceOf(SettingsError);
    expect(run.resources).toEqual([]);
  });
});
