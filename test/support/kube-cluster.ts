import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parse } from 'yaml';
import { freePort } from './http.ts';
import { waitFor } from './wait.ts';

/**
 * A private Kubernetes cluster for tests, from the binaries scripts/kube-toolchain.sh builds: etcd,
 * kube-apiserver, kube-controller-manager, kube-scheduler and kwok (simulated nodes: pods are
 * scheduled, turn Running and Ready, Job pods complete, claims bind; no container ever runs). All on
 * loopback, with its own CA and certificates in a temporary directory.
 *
 * Test files share one cluster per `vitest run`: the first that asks starts it, detached, under the
 * run directory global-setup.ts provides; the others find it there; global setup's teardown stops it.
 */

const KUBE_VERSION = process.env.AGENTPLANE_KUBE_VERSION ?? 'v1.33.13';
const BINARIES = ['etcd', 'kube-apiserver', 'kube-controller-manager', 'kube-scheduler', 'kwok', 'kwok.yaml', 'storage-class.yaml'];
/** The simulated node's name. */
const KWOK_NODE = 'kwok-node-0';

/**
 * Where scripts/kube-toolchain.sh left the cluster's parts, or why they are not there (the
 * tests that need them skip or fail by parts.ts's rule).
 */
export function kubeBinDir(): { bin: string; missing?: undefined } | { bin?: undefined; missing: string } {
  const home = process.env.AGENTPLANE_KUBE_HOME ?? path.join(os.homedir(), '.cache/agentplane/kubernetes');
  const bin = path.join(home, KUBE_VERSION.replace(/^v/, ''), 'bin');
  const absent = BINARIES.filter((b) => !fs.existsSync(path.join(bin, b)));
  if (absent.length === 0) return { bin };
  const missing = `${absent.join(', ')} not in ${bin}: run bash scripts/kube-toolchain.sh (etcd comes from Debian's etcd-server)`;
  return { missing };
}

/** What a test needs to reach the cluster; plain data, so it can be written to a file and shared. */
export interface KubeClusterInfo {
  /** https://127.0.0.1:<port> */
  server: string;
  /** The cluster CA (PEM). */
  ca: string;
  /** A system:masters token, for test assertions and set-up only. */
  adminToken: string;
  /** A kubeconfig file with the admin token. */
  kubeconfig: string;
  dir: string;
  /** Process group ids of the cluster's processes (each is a group leader). */
  pids: number[];
}

export interface KubeCluster extends KubeClusterInfo {
  /** The Kubernetes API as `token` (default: the admin): JSON in and out, status kept. */
  api(method: string, apiPath: string, opts?: { body?: unknown; token?: string; contentType?: string }): Promise<{ status: number; body: any }>;
  /** GET that must succeed. */
  get(apiPath: string): Promise<any>;
  /** A kubeconfig file (in the cluster's directory) that authenticates with `token`. */
  writeKubeconfig(name: string, token: string, namespace?: string): string;
  /** A token for a service account (TokenRequest API), valid for an hour. */
  serviceAccountToken(namespace: string, name: string): Promise<string>;
}

function kubeconfigYaml(server: string, caFile: string, user: Record<string, string>, namespace?: string): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'test', cluster: { server, 'certificate-authority': caFile } }],
    users: [{ name: 'user', user }],
    contexts: [{ name: 'test', context: { cluster: 'test', user: 'user', ...(namespace ? { namespace } : {}) } }],
    'current-context': 'test',
  });
}

function openssl(cwd: string, ...args: string[]) {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

/** A key and a certificate signed by the test CA. */
function issue(pki: string, name: string, subject: string, san?: string) {
  openssl(pki, 'req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', subject);
  const ext = path.join(pki, `${name}.ext`);
  fs.writeFileSync(ext, san ? `subjectAltName=${san}\n` : 'extendedKeyUsage=clientAuth\n');
  openssl(
    pki,
    'x509',
    '-req',
    '-in',
    `${name}.csr`,
    '-CA',
    'ca.crt',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    `${name}.crt`,
    '-days',
    '2',
    '-extfile',
    ext,
  );
}

/** Starts a new cluster in `dir` (created if needed); resolves once the node is Ready. */
export async function startKubeCluster(bin: string, dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentplane-kube-'))): Promise<KubeCluster> {
  const pki = path.join(dir, 'pki');
  const logs = path.join(dir, 'logs');
  fs.mkdirSync(pki, { recursive: true });
  fs.mkdirSync(logs, { recursive: true });
  openssl(
    pki,
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-keyout',
    'ca.key',
    '-out',
    'ca.crt',
    '-days',
    '2',
    '-subj',
    '/CN=agentplane-test-ca',
  );
  issue(pki, 'apiserver', '/CN=kube-apiserver', 'IP:127.0.0.1,DNS:localhost');
  issue(pki, 'kcm', '/CN=system:kube-controller-manager');
  issue(pki, 'scheduler', '/CN=system:kube-scheduler');
  openssl(pki, 'genrsa', '-out', 'sa.key', '2048');
  openssl(pki, 'rsa', '-in', 'sa.key', '-pubout', '-out', 'sa.pub');
  const adminToken = `admin-${Math.random().toString(36).slice(2)}${Date.now().toString(36)}`;
  fs.writeFileSync(path.join(pki, 'tokens.csv'), `${adminToken},admin,1,system:masters\n`);

  const ports: number[] = [];
  for (let i = 0; i < 7; i++) ports.push(await freePort());
  const [etcdClient, etcdPeer, etcdMetrics, apiPort, kcmPort, schedPort, kwokPort] = ports as [number, number, number, number, number, number, number];
  const server = `https://127.0.0.1:${apiPort}`;
  // Address ranges of this cluster alone: kube-network.ts maps them into 127/8, where two clusters
  // on one machine (test runs side by side, a bench) must not meet.
  const octet = (from: number, span: number) => from + Math.floor(Math.random() * span);
  const serviceRange = `10.${octet(100, 100)}.0.0/16`;
  const podRange = `10.${octet(200, 50)}.${octet(0, 256)}.1/24`;
  const ca = path.join(pki, 'ca.crt');
  const kubeconfig = path.join(dir, 'admin.kubeconfig');
  fs.writeFileSync(kubeconfig, kubeconfigYaml(server, ca, { token: adminToken }));
  const certConfig = (name: string) => {
    const file = path.join(dir, `${name}.kubeconfig`);
    fs.writeFileSync(file, kubeconfigYaml(server, ca, { 'client-certificate': path.join(pki, `${name}.crt`), 'client-key': path.join(pki, `${name}.key`) }));
    return file;
  };
  const kcmConfig = certConfig('kcm');
  const schedConfig = certConfig('scheduler');

  const pids: number[] = [];
  const info: KubeClusterInfo = { server, ca: fs.readFileSync(ca, 'utf8'), adminToken, kubeconfig, dir, pids };
  const run = (name: string, args: string[]) => {
    const out = fs.openSync(path.join(logs, `${name}.log`), 'a');
    // Detached: its own process group, which outlives the test file that started it.
    const child = spawn(path.join(bin, name), args, { detached: true, stdio: ['ignore', out, out] });
    fs.closeSync(out);
    child.unref();
    pids.push(child.pid!);
    fs.writeFileSync(path.join(dir, 'pids'), pids.join('\n'));
    return child;
  };
  const log = (name: string) =>
    fs
      .readFileSync(path.join(logs, `${name}.log`), 'utf8')
      .split('\n')
      .slice(-15)
      .join('\n');
  const alive = (child: ReturnType<typeof run>, name: string) => {
    if (child.exitCode !== null) throw new Error(`${name} exited ${child.exitCode}:\n${log(name)}`);
  };

  try {
    const loop = (p: number) => `http://127.0.0.1:${p}`;
    const etcd = run('etcd', [
      '--data-dir',
      path.join(dir, 'etcd'),
      '--name',
      'test',
      '--listen-client-urls',
      loop(etcdClient),
      '--advertise-client-urls',
      loop(etcdClient),
      '--listen-peer-urls',
      loop(etcdPeer),
      '--initial-advertise-peer-urls',
      loop(etcdPeer),
      '--initial-cluster',
      `test=${loop(etcdPeer)}`,
      '--listen-metrics-urls',
      loop(etcdMetrics),
      // A test cluster's data is thrown away: no fsync per write on a busy disk.
      '--unsafe-no-fsync',
    ]);
    await waitFor(
      () => `etcd health\n${log('etcd')}`,
      async () => {
        alive(etcd, 'etcd');
        return fetch(`${loop(etcdClient)}/health`).then(
          (r) => r.ok,
          () => false,
        );
      },
      60_000,
      100,
    );

    const apiserver = run('kube-apiserver', [
      `--etcd-servers=${loop(etcdClient)}`,
      '--bind-address=127.0.0.1',
      '--advertise-address=127.0.0.1',
      `--secure-port=${apiPort}`,
      `--tls-cert-file=${pki}/apiserver.crt`,
      `--tls-private-key-file=${pki}/apiserver.key`,
      `--client-ca-file=${ca}`,
      `--requestheader-client-ca-file=${ca}`,
      `--token-auth-file=${pki}/tokens.csv`,
      `--service-account-key-file=${pki}/sa.pub`,
      `--service-account-signing-key-file=${pki}/sa.key`,
      '--service-account-issuer=https://kubernetes.default.svc',
      '--authorization-mode=RBAC',
      `--service-cluster-ip-range=${serviceRange}`,
      '--endpoint-reconciler-type=none',
      `--cert-dir=${pki}/gen`,
      '--profiling=false',
      // Request queueing per priority level protects shared clusters; a test cluster has one client at a time.
      '--enable-priority-and-fairness=false',
    ]);
    const cluster = clusterClient(info);
    await waitFor(
      () => `kube-apiserver /readyz\n${log('kube-apiserver')}`,
      async () => {
        alive(apiserver, 'kube-apiserver');
        return (await cluster.api('GET', '/readyz').catch(() => ({ status: 0 }))).status === 200;
      },
      120_000,
      200,
    );

    const authn = (file: string) => [`--kubeconfig=${file}`, `--authentication-kubeconfig=${file}`, `--authorization-kubeconfig=${file}`];
    run('kube-controller-manager', [
      ...authn(kcmConfig),
      '--bind-address=127.0.0.1',
      `--secure-port=${kcmPort}`,
      '--leader-elect=false',
      '--use-service-account-credentials=true',
      `--service-account-private-key-file=${pki}/sa.key`,
      `--root-ca-file=${ca}`,
      '--controllers=*,-nodeipam',
      `--cert-dir=${pki}/kcm`,
    ]);
    run('kube-scheduler', [
      ...authn(schedConfig),
      '--bind-address=127.0.0.1',
      `--secure-port=${schedPort}`,
      '--leader-elect=false',
      `--cert-dir=${pki}/scheduler`,
    ]);
    run('kwok', [
      `--kubeconfig=${kubeconfig}`,
      `--config=${path.join(bin, 'kwok.yaml')}`,
      '--manage-all-nodes=false',
      '--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake',
      '--node-lease-duration-seconds=40',
      `--cidr=${podRange}`,
      '--node-ip=10.0.0.1',
      `--server-address=127.0.0.1:${kwokPort}`,
    ]);

    // The default StorageClass before any claim: a claim made without one keeps no class forever.
    const storageClass = parse(fs.readFileSync(path.join(bin, 'storage-class.yaml'), 'utf8'));
    await must(cluster.api('POST', '/apis/storage.k8s.io/v1/storageclasses', { body: storageClass }));
    const resources = { cpu: '32', memory: '256Gi', pods: '110' };
    await must(
      cluster.api('POST', '/api/v1/nodes', {
        body: {
          apiVersion: 'v1',
          kind: 'Node',
          metadata: { name: KWOK_NODE, annotations: { 'kwok.x-k8s.io/node': 'fake' }, labels: { 'kubernetes.io/hostname': KWOK_NODE, type: 'kwok' } },
          status: { capacity: resources, allocatable: resources },
        },
      }),
    );
    await waitFor(
      () => `node ${KWOK_NODE} Ready\n${log('kwok')}`,
      async () => {
        const node = (await cluster.api('GET', `/api/v1/nodes/${KWOK_NODE}`)).body;
        return node?.status?.conditions?.some((c: any) => c.type === 'Ready' && c.status === 'True');
      },
      60_000,
      200,
    );
    // Pods need their namespace's default ServiceAccount, which the controller manager makes.
    await waitFor(
      'the default ServiceAccount',
      async () => (await cluster.api('GET', '/api/v1/namespaces/default/serviceaccounts/default')).status === 200,
      60_000,
      200,
    );
    fs.writeFileSync(path.join(dir, 'cluster.json'), JSON.stringify(info));
    return cluster;
  } catch (err) {
    stopKubeCluster(info);
    throw err;
  }
}

async function must(res: Promise<{ status: number; body: any }>) {
  const r = await res;
  if (r.status >= 300) throw new Error(`Kubernetes API ${r.status}: ${JSON.stringify(r.body)}`);
  return r.body;
}

/** Stops every process of the cluster (SIGTERM, then SIGKILL) and removes its directory. */
export function stopKubeCluster(info: Pick<KubeClusterInfo, 'pids' | 'dir'>, keepDir = false): void {
  for (const pid of info.pids) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  if (!keepDir) fs.rmSync(info.dir, { recursive: true, force: true });
}

/** A client for a running cluster described by `info`. */
export function clusterClient(info: KubeClusterInfo): KubeCluster {
  const agent = new https.Agent({ ca: info.ca, keepAlive: true });
  const api: KubeCluster['api'] = (method, apiPath, opts = {}) =>
    new Promise((resolve, reject) => {
      const payload = opts.body === undefined ? undefined : Buffer.from(JSON.stringify(opts.body));
      const req = https.request(
        `${info.server}${apiPath}`,
        {
          method,
          agent,
          headers: {
            authorization: `Bearer ${opts.token ?? info.adminToken}`,
            accept: 'application/json',
            ...(payload ? { 'content-type': opts.contentType ?? 'application/json', 'content-length': payload.length } : {}),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let body: any = text;
            try {
              body = text ? JSON.parse(text) : undefined;
            } catch {
              // not JSON (e.g. /readyz's "ok")
            }
            resolve({ status: res.statusCode ?? 0, body });
          });
        },
      );
      req.on('error', reject);
      if (payload) req.write(payload);
      req.end();
    });
  return {
    ...info,
    api,
    async get(apiPath) {
      return must(api('GET', apiPath));
    },
    writeKubeconfig(name, token, namespace) {
      const file = path.join(info.dir, `${name}.kubeconfig`);
      fs.writeFileSync(file, kubeconfigYaml(info.server, path.join(info.dir, 'pki', 'ca.crt'), { token }, namespace));
      return file;
    },
    async serviceAccountToken(namespace, name) {
      const res = await must(
        api('POST', `/api/v1/namespaces/${namespace}/serviceaccounts/${name}/token`, {
          body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 3600 } },
        }),
      );
      return res.status.token as string;
    },
  };
}

declare module 'vitest' {
  export interface ProvidedContext {
    /** Where this run's shared test cluster lives once a test file has started it. */
    kubeRunDir: string;
  }
}

/**
 * The run's shared cluster: started by the first test file that asks (the others wait for it),
 * stopped by global setup's teardown. Outside a vitest run with global setup, a cluster of its own
 * (stop it with stopKubeCluster).
 */
export async function sharedKubeCluster(bin: string): Promise<KubeCluster> {
  let runDir = '';
  try {
    const { inject } = await import('vitest');
    runDir = inject('kubeRunDir');
  } catch {
    // not under vitest
  }
  if (!runDir) return startKubeCluster(bin);
  const state = path.join(runDir, 'cluster', 'cluster.json');
  const lock = path.join(runDir, 'starting');
  let owner = false;
  try {
    fs.mkdirSync(lock);
    owner = true;
  } catch {
    // another test file is starting it, or has
  }
  if (owner && !fs.existsSync(state)) {
    try {
      return await startKubeCluster(bin, path.join(runDir, 'cluster'));
    } catch (err) {
      fs.writeFileSync(path.join(runDir, 'failed'), String(err));
      throw err;
    }
  }
  const deadline = Date.now() + 180_000;
  while (!fs.existsSync(state)) {
    if (fs.existsSync(path.join(runDir, 'failed')))
      throw new Error(`the shared test cluster failed to start: ${fs.readFileSync(path.join(runDir, 'failed'), 'utf8')}`);
    if (Date.now() > deadline) throw new Error('timed out waiting for another test file to start the shared test cluster');
    await sleep(200);
  }
  return clusterClient(JSON.parse(fs.readFileSync(state, 'utf8')) as KubeClusterInfo);
}

/** For global setup: a run directory to provide as `kubeRunDir`, and its teardown. */
export function kubeRunDirectory(): { dir: string; teardown(): void } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentplane-kube-run-'));
  return {
    dir,
    teardown() {
      const pidsFile = path.join(dir, 'cluster', 'pids');
      if (fs.existsSync(pidsFile)) {
        const pids = fs.readFileSync(pidsFile, 'utf8').split('\n').filter(Boolean).map(Number);
        stopKubeCluster({ pids, dir: path.join(dir, 'cluster') });
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
