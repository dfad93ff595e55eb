/**
 * Figures of the `kubernetes` provider and the deploy program on a private cluster (kube-apiserver
 * 1.33 + kwok nodes, test/support/kube-cluster.ts). Run on demand, as root, after
 * `bash scripts/kube-toolchain.sh` and `bash scripts/pulumi-toolchain.sh`:
 *
 *   node bench/kubernetes.ts                      # 5 computers, 3 deploys
 *   BENCH_RUNS=3 BENCH_DEPLOY_RUNS=1 node bench/kubernetes.ts
 *
 * 1. POST /computers → `active` of a kubernetes computer (cold: a new stack each time; goal under
 *    3 s), beside the bare floor from the same run: the same four objects applied straight to the
 *    API server (server-side apply as the control plane's ServiceAccount) until the pod is ready.
 *    Pods start at once under kwok, so both measure software overhead, not image pulls.
 * 2. `pulumi up` of the deploy program's dev stack from empty (destroyed between runs), beside the
 *    same objects (rendered by the program with renderYamlToDirectory) applied straight to the API
 *    server until the Job completes and the Deployment and StatefulSet are ready.
 * 3. POST /computers → `active` of a claim from the organization's `kubernetes` warm pool (size 1,
 *    refilled between claims; the 201 is already `active`), on the same server, printed beside (1).
 *    BENCH_CLAIMS claims (default 5).
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { locatePulumiToolchain } from '../src/provisioning/pulumi/toolchain.ts';
import { kubeBinDir, startKubeCluster, stopKubeCluster, type KubeCluster } from '../test/support/kube-cluster.ts';
import { startTestKubelet } from '../test/support/kube-kubelet.ts';
import { grantControlPlane } from '../test/support/kube-rbac.ts';
import { CLI, startServerProcess } from '../test/support/server-process.ts';
import { devStack } from '../test/deploy/dev-stack.ts';

const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const DEPLOY_RUNS = Number(process.env.BENCH_DEPLOY_RUNS ?? 3);
const CLAIMS = Number(process.env.BENCH_CLAIMS ?? 5);
const REPO_ROOT = path.resolve(import.meta.dirname, '..');

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};
const sec = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until<T>(what: string, probe: () => Promise<T | undefined | false>, timeoutMs = 120_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > end) throw new Error(`timed out: ${what}`);
    await sleep(25);
  }
}

/** Server-side apply of one object as `token`. */
async function apply(cluster: KubeCluster, obj: any, token?: string) {
  const kinds: Record<string, [string, string]> = {
    Namespace: ['/api/v1', 'namespaces'],
    Secret: ['/api/v1', 'secrets'],
    Service: ['/api/v1', 'services'],
    ServiceAccount: ['/api/v1', 'serviceaccounts'],
    PersistentVolumeClaim: ['/api/v1', 'persistentvolumeclaims'],
    StatefulSet: ['/apis/apps/v1', 'statefulsets'],
    Deployment: ['/apis/apps/v1', 'deployments'],
    Job: ['/apis/batch/v1', 'jobs'],
    Role: ['/apis/rbac.authorization.k8s.io/v1', 'roles'],
    RoleBinding: ['/apis/rbac.authorization.k8s.io/v1', 'rolebindings'],
    Ingress: ['/apis/networking.k8s.io/v1', 'ingresses'],
    NetworkPolicy: ['/apis/networking.k8s.io/v1', 'networkpolicies'],
    PodDisruptionBudget: ['/apis/policy/v1', 'poddisruptionbudgets'],
  };
  const [base, plural] = kinds[obj.kind]!;
  const ns = obj.kind === 'Namespace' ? '' : `/namespaces/${obj.metadata.namespace}`;
  const res = await cluster.api('PATCH', `${base}${ns}/${plural}/${obj.metadata.name}?fieldManager=bench&force=true`, {
    body: obj,
    token,
    contentType: 'application/apply-patch+yaml',
  });
  if (res.status >= 300) throw new Error(`apply ${obj.kind}/${obj.metadata.name}: ${res.status} ${JSON.stringify(res.body)}`);
}

/** The object as it was applied: no server-made fields. */
function asApplied(obj: any, rename: (n: string) => string) {
  const { name, namespace, labels, annotations } = obj.metadata;
  const out = {
    apiVersion: obj.apiVersion,
    kind: obj.kind,
    metadata: { name: rename(name), namespace, labels, annotations },
    ...Object.fromEntries(Object.entries(obj).filter(([k]) => !['apiVersion', 'kind', 'metadata', 'status'].includes(k))),
  } as any;
  // A live claim names the volume it is bound to: a copy must get its own.
  if (obj.kind === 'PersistentVolumeClaim') delete out.spec.volumeName;
  if (obj.kind === 'Service') {
    delete out.spec.clusterIP;
    delete out.spec.clusterIPs;
  }
  return out;
}

async function main() {
  const kube = kubeBinDir();
  if (!kube.bin) throw new Error(kube.missing);
  const toolchain = locatePulumiToolchain();
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'agentplane-bench-kube-'));
  const cluster = await startKubeCluster(kube.bin);
  console.log(`cluster: kube-apiserver ${(await cluster.get('/version')).gitVersion}, one kwok node`);
  try {
    // ---- 1. computers ----
    const ns = 'agentplane';
    const computersNs = 'agentplane-computers';
    const saKubeconfig = await grantControlPlane(cluster, toolchain, { namespace: ns, computersNamespace: computersNs, workDir: scratch });
    const saToken = await cluster.serviceAccountToken(ns, 'agentplane');
    const kubelet = startTestKubelet(cluster, computersNs);
    const clusterFile = path.join(scratch, 'cluster.json');
    writeFileSync(clusterFile, JSON.stringify(cluster));
    const dataDir = path.join(scratch, 'data');
    const server = await startServerProcess(
      { AGENTPLANE_DATA_DIR: dataDir, KUBECONFIG: saKubeconfig, AGENTPLANE_TEST_KUBE_CLUSTER: clusterFile, AGENTPLANE_COMPUTERS_NAMESPACE: computersNs },
      { processGroup: true, command: [process.execPath, '--import', path.join(REPO_ROOT, 'test/support/kube-network-preload.ts'), CLI, 'serve'] },
    );
    const call = async (method: string, p: string, body?: unknown) => {
      const res = await fetch(`${server.url}${p}`, {
        method,
        headers: { authorization: `Bearer ${server.firstStartKey}`, 'content-type': 'application/json' },
        body: body ? JSON.stringify(body) : undefined,
      });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : undefined };
    };
    const totals: number[] = [];
    const pulumi: number[] = [];
    const bare: number[] = [];
    const claims: number[] = [];
    const tornDown = (id: string) =>
      until(`computer ${id} torn down`, async () => {
        const list = (await call('GET', '/api/v0/computers?includeDeleted=true&includeProvisioningSteps=true')).body.computers;
        return list.find((x: any) => x.id === id)?.provisioningSteps.find((s: any) => s.id === 'teardown')?.status === 'completed';
      });
    try {
      for (let i = 0; i < RUNS; i++) {
        const started = performance.now();
        const created = await call('POST', '/api/v0/computers', { name: `bench-${i}`, provider: 'kubernetes' });
        if (created.status !== 201) throw new Error(JSON.stringify(created.body));
        const id = created.body.id as string;
        const c = await until(`computer ${id} active`, async () => {
          const body = (await call('GET', `/api/v0/computers/${id}?includeProvisioningSteps=true`)).body;
          return body.status !== 'provisioning' && body;
        });
        totals.push(performance.now() - started);
        if (c.status !== 'active') throw new Error(`${id} ended ${c.status}: ${JSON.stringify(c.provisioningSteps)}\n${kubelet.logs()}`);
        const step = c.provisioningSteps.find((s: any) => s.id === 'create-infrastructure');
        pulumi.push(step.completedAt - step.startedAt);

        // The floor: the same objects, applied straight to the API server as the same ServiceAccount.
        const name = id.replaceAll('_', '-');
        const rename = (n: string) => n.replace(name, `${name}-bare`);
        const objs = [
          await cluster.get(`/api/v1/namespaces/${computersNs}/secrets/${name}-ssh`),
          await cluster.get(`/api/v1/namespaces/${computersNs}/persistentvolumeclaims/${name}-home`),
          await cluster.get(`/api/v1/namespaces/${computersNs}/services/${name}`),
          await cluster.get(`/apis/apps/v1/namespaces/${computersNs}/statefulsets/${name}`),
        ].map((o) => asApplied(o, rename));
        const set = objs[3];
        set.spec.template.spec.volumes.find((v: any) => v.persistentVolumeClaim).persistentVolumeClaim.claimName = `${name}-bare-home`;
        set.spec.template.spec.volumes.find((v: any) => v.secret).secret.secretName = `${name}-bare-ssh`;
        set.spec.serviceName = `${name}-bare`;
        // Distinct labels: the bare pod must not answer the computer's Service.
        const bareLabels = { 'app.kubernetes.io/name': 'bench-bare', 'bench/id': `${name}-bare` };
        set.spec.selector = { matchLabels: bareLabels };
        set.spec.template.metadata.labels = bareLabels;
        objs[2].spec.selector = bareLabels;
        for (const o of objs) o.metadata.labels = bareLabels;
        const t0 = performance.now();
        for (const o of objs) await apply(cluster, o, saToken);
        await until(
          'the bare StatefulSet ready',
          async () => (await cluster.get(`/apis/apps/v1/namespaces/${computersNs}/statefulsets/${name}-bare`)).status?.readyReplicas === 1,
        );
        bare.push(performance.now() - t0);
        for (const p of ['secrets/-ssh', 'persistentvolumeclaims/-home', 'services/', 'statefulsets/']) {
          const [kind, sfx] = p.split('/');
          const base = kind === 'statefulsets' ? '/apis/apps/v1' : '/api/v1';
          await cluster.api('DELETE', `${base}/namespaces/${computersNs}/${kind}/${name}-bare${sfx}`);
        }
        await call('DELETE', `/api/v0/computers/${id}`);
        await tornDown(id);
      }

      // 3. Claims from a warm pool of one, each once the pool is whole again (a cold provision).
      const sized = await call('PUT', '/api/v0/computers/pool/providers/kubernetes', { warmPoolSize: 1 });
      if (sized.status !== 200) throw new Error(JSON.stringify(sized.body));
      const poolWhole = () =>
        until('the kubernetes pool ready', async () => {
          const p = (await call('GET', '/api/v0/computers/pool')).body.pools.find((x: any) => x.provider === 'kubernetes');
          return p?.ready === 1 && p.provisioning === 0;
        });
      const claimed: string[] = [];
      for (let i = 0; i < CLAIMS; i++) {
        await poolWhole();
        const started = performance.now();
        const created = await call('POST', '/api/v0/computers', { name: `warm-${i}`, provider: 'kubernetes' });
        if (created.status !== 201) throw new Error(JSON.stringify(created.body));
        const c =
          created.body.status === 'active'
            ? created.body
            : await until(`claimed ${created.body.id} active`, async () => {
                const body = (await call('GET', `/api/v0/computers/${created.body.id}`)).body;
                return body.status !== 'provisioning' && body;
              });
        claims.push(performance.now() - started);
        if (c.status !== 'active') throw new Error(`${c.id} ended ${c.status}`);
        if (created.body.status !== 'active') console.warn(`  claim ${i} was not served by the pool (201 ${created.body.status})`);
        claimed.push(c.id);
      }
      await call('PUT', '/api/v0/computers/pool/providers/kubernetes', { warmPoolSize: 0 });
      for (const id of claimed) await call('DELETE', `/api/v0/computers/${id}`);
      for (const id of claimed) await tornDown(id);
    } finally {
      await server.stop('SIGKILL');
      await kubelet.stop();
    }
    console.log(
      `kubernetes computer, POST -> active (cold), median of ${RUNS}: ${sec(median(totals))} (goal < 3 s); pulumi up step ${sec(median(pulumi))}; ` +
        `bare apply of the same 4 objects until the pod is ready: ${sec(median(bare))}`,
    );
    console.log(`  runs: ${totals.map(sec).join(', ')}`);
    console.log(
      `kubernetes computer, POST -> active from a warm pool of 1, median of ${CLAIMS}: ${median(claims).toFixed(0)} ms ` +
        `(cold median of the same run: ${sec(median(totals))})`,
    );
    console.log(`  claims: ${claims.map((ms) => `${ms.toFixed(0)} ms`).join(', ')}`);

    // ---- 2. the deploy program ----
    const stackOf = (stackName: string, extra: Record<string, string>) => devStack(toolchain, mkdtempSync(path.join(scratch, 'deploy-')), stackName, extra);
    process.env.KUBECONFIG = cluster.kubeconfig;
    const ups: number[] = [];
    for (let i = 0; i < DEPLOY_RUNS; i++) {
      const stack = await stackOf('bench', { image: 'agentplane:bench', namespace: `deploy-${i}`, computersNamespace: `deploy-${i}-computers` });
      const t0 = performance.now();
      const res = await stack.up();
      ups.push(performance.now() - t0);
      if (res.summary.result !== 'succeeded') throw new Error('pulumi up failed');
      await stack.destroy();
    }
    // The floor: what the program renders, applied straight, namespaces first, waited on the same way.
    // Upstream's provider refuses a kubeconfig (which the SDK takes from KUBECONFIG) beside renderYamlToDirectory.
    delete process.env.KUBECONFIG;
    const render = path.join(scratch, 'rendered');
    const renderStack = await stackOf('render', {
      image: 'agentplane:bench',
      namespace: 'deploy-bare',
      computersNamespace: 'deploy-bare-computers',
      renderYamlToDirectory: render,
    });
    await renderStack.up();
    const docs: any[] = [];
    for (const f of readdirSync(path.join(render, '1-manifest')))
      docs.push(...parseAllDocuments(readFileSync(path.join(render, '1-manifest', f), 'utf8')).map((d) => d.toJSON()));
    docs.sort((a, b) => Number(b.kind === 'Namespace') - Number(a.kind === 'Namespace'));
    const t0 = performance.now();
    for (const d of docs) await apply(cluster, d);
    for (const d of docs) {
      if (d.kind === 'Job')
        await until(
          'the Job complete',
          async () => (await cluster.get(`/apis/batch/v1/namespaces/${d.metadata.namespace}/jobs/${d.metadata.name}`)).status?.succeeded >= 1,
        );
      if (d.kind === 'Deployment' || d.kind === 'StatefulSet') {
        await until(
          `${d.kind} ready`,
          async () =>
            (await cluster.get(`/apis/apps/v1/namespaces/${d.metadata.namespace}/${d.kind.toLowerCase()}s/${d.metadata.name}`)).status?.readyReplicas ===
            (d.spec.replicas ?? 1),
        );
      }
    }
    const bareDeploy = performance.now() - t0;
    console.log(
      `deploy program (dev stack, ${docs.length} objects), pulumi up from empty, median of ${DEPLOY_RUNS}: ${sec(median(ups))}; ` +
        `bare apply of the rendered objects until ready: ${sec(bareDeploy)}`,
    );
    console.log(`  runs: ${ups.map(sec).join(', ')}`);
  } finally {
    stopKubeCluster(cluster);
    rmSync(scratch, { recursive: true, force: true });
  }
}

await main();
