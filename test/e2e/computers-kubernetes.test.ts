import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { computersReapJob } from '../../src/modules/computers/managed/job-kinds.ts';
import { targetFor } from '../../src/modules/computers/machines.ts';
import { poolConvergeJob } from '../../src/modules/computers/pool/job-kinds.ts';
import { kubernetesPluginPath } from '../../src/provisioning/providers/kubernetes/index.ts';
import { createSshClient, SshError } from '../../src/ssh/index.ts';
import { locatePulumiToolchain } from '../../src/provisioning/pulumi/toolchain.ts';
import { startTestApi, type TestApi } from '../support/api.ts';
import { kubeBinDir, sharedKubeCluster, type KubeCluster } from '../support/kube-cluster.ts';
import { grantControlPlane } from '../support/kube-rbac.ts';
import { startTestKubelet, type TestKubelet } from '../support/kube-kubelet.ts';
import { installClusterNetwork, type ClusterNetwork } from '../support/kube-network.ts';
import { CLI, startServerProcess, type ServerProcess } from '../support/server-process.ts';
import { isRoot, sshdMissing } from '../support/sshd.ts';
import { waitFor } from '../support/wait.ts';
import { skipWithout } from '../support/parts.ts';

/**
 * Managed computers of the `kubernetes` provider on a real API server (kube-cluster.ts: etcd,
 * kube-apiserver, controller-manager, scheduler, kwok nodes), through the HTTP API. The provider
 * runs as the deploy program's ServiceAccount, bound by the Role the deploy program grants, so a
 * verb missing from that Role fails here. kwok makes pods Running without containers; the test
 * kubelet (kube-kubelet.ts) runs each computer pod's sshd from the image's start script with the
 * Secret the cluster holds, and kube-network.ts stands in for cluster DNS and kube-proxy, so the
 * connect and verify steps run over SSH for real.
 */
const toolchain = locatePulumiToolchain();
const kube = kubeBinDir();
const missing =
  kube.missing ??
  (toolchain.available ? undefined : `the Pulumi CLI is missing (bash scripts/pulumi-toolchain.sh)`) ??
  (existsSync(kubernetesPluginPath(toolchain.pulumiHome)) ? undefined : 'pulumi-resource-kubernetes is missing (bash scripts/pulumi-toolchain.sh)') ??
  sshdMissing() ??
  (isRoot ? undefined : "the test kubelet runs sshd as the image's user and kube-proxy's port 22: needs root");
const skip = skipWithout('the kubernetes computer tests', missing);

const PROVISION_MS = 90_000;
const suffix = Date.now().toString(36);
const NS = `agentplane-${suffix}`;
const COMPUTERS_NS = `agentplane-${suffix}-computers`;
const LABEL = 'agentplane.dev/computer-id';

describe.skipIf(skip)('managed computers on Kubernetes (API server + kwok), through HTTP', { timeout: 180_000 }, () => {
  let cluster: KubeCluster;
  let network: ClusterNetwork;
  let kubelet: TestKubelet;
  let api: TestApi;
  let as: string;
  let scratch: string;
  let saKubeconfig: string;
  const env = {
    AGENTPLANE_COMPUTERS_NAMESPACE: COMPUTERS_NS,
    AGENTPLANE_COMPUTER_CPUS: '0.5',
    AGENTPLANE_COMPUTER_MEMORY_MIB: '512',
    AGENTPLANE_COMPUTER_DISK_GIB: '3',
    AGENTPLANE_K8S_CPU_REQUEST_FRACTION: '0.5',
  };

  beforeAll(async () => {
    cluster = await sharedKubeCluster(kube.bin!);
    scratch = mkdtempSync(path.join(os.tmpdir(), 'agentplane-kube-computers-'));
    // The provider's kubeconfig: the deploy program's ServiceAccount's token, not the admin's.
    saKubeconfig = await grantControlPlane(cluster, toolchain, { namespace: NS, computersNamespace: COMPUTERS_NS, workDir: scratch });
    process.env.KUBECONFIG = saKubeconfig;
    network = installClusterNetwork(cluster);
    kubelet = startTestKubelet(cluster, COMPUTERS_NS);
    api = await startTestApi('pglite', { worker: true, env });
    as = api.acme.members.user.apiKey;
  });

  afterAll(async () => {
    if (api) {
      // A pool left sized by a failed test is drained too.
      await api.db.prisma.organization.updateMany({ data: { warmPoolDefaults: {} } });
      await api.queue.send(poolConvergeJob, { organizationId: api.acme.id });
      const live = await api.db.prisma.computer.findMany({ where: { deletedAt: null } });
      await Promise.all(live.map((c) => api.call('DELETE', `/api/v0/computers/${c.id}`, { as: api.acme.members.owner.apiKey })));
      await waitFor(
        'every teardown',
        async () => (await api.db.prisma.computer.count({ where: { OR: [{ operation: 'teardown' }, { ownerKind: 'pool', deletedAt: null }] } })) === 0,
        PROVISION_MS,
        250,
      ).catch((err: unknown) => console.error(err));
    }
    await api?.close();
    await kubelet?.stop();
    await network?.close();
    delete process.env.KUBECONFIG;
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  const get = async (id: string) => (await api.call('GET', `/api/v0/computers/${id}`, { as })).body;
  const objects = async (id: string) => {
    const selector = `?labelSelector=${encodeURIComponent(`${LABEL}=${id}`)}`;
    const kinds = [
      '/api/v1/namespaces/NS/secrets',
      '/api/v1/namespaces/NS/persistentvolumeclaims',
      '/api/v1/namespaces/NS/services',
      '/apis/apps/v1/namespaces/NS/statefulsets',
      '/api/v1/namespaces/NS/pods',
    ];
    const found: string[] = [];
    for (const k of kinds) {
      const list = await cluster.get(k.replace('NS', COMPUTERS_NS) + selector);
      for (const item of list.items) found.push(`${k.split('/').pop()}/${item.metadata.name}`);
    }
    return found;
  };
  const run = async (id: string, command: string) => {
    const computer = await api.db.prisma.computer.findUniqueOrThrow({ where: { id } });
    const res = await api.machines.ssh.exec(await targetFor({ ...api.machines, db: api.db.prisma }, computer), command);
    expect(res.exitCode, res.stderr).toBe(0);
    return res.stdout;
  };

  let id = '';
  let name = '';

  it('creates a computer: active over SSH, with every object on the API server as the settings say', async () => {
    const started = performance.now();
    const res = await api.call('POST', '/api/v0/computers', { as, body: { name: 'kube-box', provider: 'kubernetes' } });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    id = res.body.id;
    name = id.replaceAll('_', '-');
    const c = await waitFor(
      `computer ${id} to leave provisioning`,
      async () => {
        const body = await get(id);
        return body.status !== 'provisioning' && body;
      },
      PROVISION_MS,
      100,
    );
    const elapsed = performance.now() - started;
    expect(c.status, JSON.stringify(c.provisioningSteps)).toBe('active');
    expect(c.provisioningSteps.map((s: { id: string; status: string }) => [s.id, s.status])).toEqual([
      ['create-infrastructure', 'completed'],
      ['connect', 'completed'],
      ['verify', 'completed'],
    ]);
    console.log(`kubernetes computer: POST -> active in ${(elapsed / 1000).toFixed(2)} s (cold, kwok node)`);
    expect(c.remoteUser).toBe('agent');
    const stored = await api.db.prisma.computer.findUniqueOrThrow({ where: { id } });
    expect(stored.sshHost).toBe(`${name}.${COMPUTERS_NS}.svc`);
    expect(stackTraces(api.dataDir, id)).toHaveLength(2);

    const labels = { [LABEL]: id, 'agentplane.dev/organization-id': api.acme.id, 'app.kubernetes.io/managed-by': 'agentplane' };
    const at = (kind: string, n: string) => cluster.get(kind.replace('NS', COMPUTERS_NS) + '/' + n);
    const secret = await at('/api/v1/namespaces/NS/secrets', `${name}-ssh`);
    expect(secret.metadata.labels).toMatchObject(labels);
    expect(Buffer.from(secret.data.authorized_keys, 'base64').toString().trim()).toBe(stored.sshPublicKey!.trim());
    expect(Buffer.from(secret.data.ssh_host_ed25519_key, 'base64').toString()).toContain('PRIVATE KEY');
    const claim = await at('/api/v1/namespaces/NS/persistentvolumeclaims', `${name}-home`);
    expect(claim.metadata.labels).toMatchObject(labels);
    expect(claim.spec.resources.requests.storage).toBe('3Gi');
    expect(claim.status.phase).toBe('Bound');
    const set = await at('/apis/apps/v1/namespaces/NS/statefulsets', name);
    expect(set.metadata.labels).toMatchObject(labels);
    expect(set.spec.replicas).toBe(1);
    const container = set.spec.template.spec.containers[0];
    expect(container.resources).toEqual({ limits: { cpu: '500m', memory: '512Mi' }, requests: { cpu: '250m', memory: '512Mi' } });
    expect(set.spec.template.spec.automountServiceAccountToken).toBe(false);
    const service = await at('/api/v1/namespaces/NS/services', name);
    expect(service.metadata.labels).toMatchObject(labels);
    expect(service.spec).toMatchObject({ type: 'ClusterIP', ports: [{ port: 22, targetPort: 'ssh', protocol: 'TCP' }] });
    const pods = (await cluster.get(`/api/v1/namespaces/${COMPUTERS_NS}/pods?labelSelector=${encodeURIComponent(`${LABEL}=${id}`)}`)).items;
    expect(pods.map((p: any) => [p.metadata.name, p.status.phase, p.spec.nodeName])).toEqual([[`${name}-0`, 'Running', 'kwok-node-0']]);

    // Over SSH, through the Service, into the test kubelet's sshd on the claim's volume.
    expect((await run(id, 'id -un; echo "$HOME"')).trim().split('\n')).toEqual(['agent', '/home/agent']);
    await run(id, 'echo kept > ~/kept');
    expect(readdirSync(kubelet.homeOf(claim.spec.volumeName))).toContain('kept');
  });

  it('pauses to zero pods with the claim kept, and restart brings one pod back on the same claim', async () => {
    const claimBefore = await cluster.get(`/api/v1/namespaces/${COMPUTERS_NS}/persistentvolumeclaims/${name}-home`);
    const earlier = new Date(Date.now() - 2 * 3600_000);
    await api.db.prisma.computer.update({ where: { id }, data: { lastActiveAt: earlier } });
    await api.queue.send(computersReapJob, {});
    await waitFor('the idle computer to pause', async () => (await get(id)).powerState === 'paused', PROVISION_MS, 250);
    const set = await cluster.get(`/apis/apps/v1/namespaces/${COMPUTERS_NS}/statefulsets/${name}`);
    expect(set.spec.replicas).toBe(0);
    await waitFor('the pod to go', async () => (await objects(id)).every((o) => !o.startsWith('pods/')), 30_000, 200);
    expect((await objects(id)).sort()).toEqual([`persistentvolumeclaims/${name}-home`, `secrets/${name}-ssh`, `services/${name}`, `statefulsets/${name}`]);
    const claimPaused = await cluster.get(`/api/v1/namespaces/${COMPUTERS_NS}/persistentvolumeclaims/${name}-home`);
    expect(claimPaused.metadata.uid).toBe(claimBefore.metadata.uid);

    const restart = await api.call('POST', `/api/v0/computers/${id}/restart`, { as });
    expect(restart.status, JSON.stringify(restart.body)).toBe(200);
    expect((await get(id)).powerState).toBe('running');
    const pods = (await cluster.get(`/api/v1/namespaces/${COMPUTERS_NS}/pods?labelSelector=${encodeURIComponent(`${LABEL}=${id}`)}`)).items;
    expect(pods).toHaveLength(1);
    expect(pods[0].spec.volumes.find((v: any) => v.name === 'home').persistentVolumeClaim.claimName).toBe(`${name}-home`);
    const claimAfter = await cluster.get(`/api/v1/namespaces/${COMPUTERS_NS}/persistentvolumeclaims/${name}-home`);
    expect([claimAfter.metadata.uid, claimAfter.spec.volumeName]).toEqual([claimBefore.metadata.uid, claimBefore.spec.volumeName]);
    expect((await run(id, 'cat ~/kept')).trim()).toBe('kept');
  });

  it('deletes: every object and the stack are gone', async () => {
    expect((await api.call('DELETE', `/api/v0/computers/${id}`, { as })).status).toBe(204);
    await waitFor(
      'the teardown',
      async () => {
        const step = await api.db.prisma.provisioningStep.findUnique({ where: { computerId_id: { computerId: id, id: 'teardown' } } });
        return step?.status === 'completed';
      },
      PROVISION_MS,
      250,
    );
    let left: string[] = [];
    await waitFor(
      () => `nothing left of ${id}: ${left}`,
      async () => (left = await objects(id)).length === 0,
      30_000,
      200,
    );
    expect(stackTraces(api.dataDir, id)).toEqual([]);
  });

  it("a warm pool: the claim is the caller's, active at the 201, and the caller's key outlives the pod being recreated", async () => {
    const manager = api.acme.members.manager.apiKey;
    const kubePool = async () =>
      (await api.call('GET', '/api/v0/computers/pool', { as: manager })).body.pools.find((p: { provider: string }) => p.provider === 'kubernetes');
    const poolReady = () =>
      waitFor(
        'the kubernetes pool to hold 1 ready computer',
        async () => {
          const p = await kubePool();
          return p && p.ready === 1 && p.provisioning === 0 && p.failed === 0 && p;
        },
        PROVISION_MS,
        250,
      );
    const poolRows = () => api.db.prisma.computer.findMany({ where: { ownerKind: 'pool', deletedAt: null } });
    const fresh = createSshClient();
    /** Over a client of its own, so no connection the server pooled with another key answers. */
    const login = async (computerId: string, privateKey: string) => {
      const c = await api.db.prisma.computer.findUniqueOrThrow({ where: { id: computerId } });
      const target = { host: c.sshHost!, port: c.sshPort!, username: c.remoteUser!, hostKeyFingerprint: c.hostKeyFingerprint!, privateKey };
      return fresh.exec(target, 'whoami').then(
        (r) => r.stdout.trim(),
        (err: unknown) => (err instanceof SshError ? err.kind : String(err)),
      );
    };
    const secretKey = async (n: string) =>
      Buffer.from((await cluster.get(`/api/v1/namespaces/${COMPUTERS_NS}/secrets/${n}-ssh`)).data.authorized_keys, 'base64')
        .toString()
        .trim();
    const podsOf = async (computerId: string) =>
      (await cluster.get(`/api/v1/namespaces/${COMPUTERS_NS}/pods?labelSelector=${encodeURIComponent(`${LABEL}=${computerId}`)}`)).items;
    try {
      const set = await api.call('PUT', '/api/v0/computers/pool/providers/kubernetes', { as: manager, body: { warmPoolSize: 1 } });
      expect(set.status, JSON.stringify(set.body)).toBe(200);
      expect(await poolReady()).toEqual({ provider: 'kubernetes', size: 1, ready: 1, provisioning: 0, failed: 0 });
      const [pooled] = await poolRows();
      const poolKey = api.machines.secrets.open(pooled!.sshKeyCiphertext!);
      const warm = pooled!.id.replaceAll('_', '-');
      expect(await secretKey(warm)).toBe(pooled!.sshPublicKey!.trim());

      const started = performance.now();
      const res = await api.call('POST', '/api/v0/computers', { as, body: { name: 'kube-warm', provider: 'kubernetes' } });
      const ms = performance.now() - started;
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      expect(res.body).toMatchObject({
        id: pooled!.id,
        name: 'kube-warm',
        status: 'active',
        providerType: 'kubernetes',
        ownerPrincipalKind: 'human',
        ownerId: api.acme.members.user.userId,
      });
      console.log(`kubernetes pool claim: POST -> active in ${ms.toFixed(0)} ms`);
      const claimed = await api.db.prisma.computer.findUniqueOrThrow({ where: { id: pooled!.id } });
      expect(claimed).toMatchObject({ ownerKind: 'human', ownerId: api.acme.members.user.userId, operation: null });
      expect(claimed.sshPublicKey).not.toBe(pooled!.sshPublicKey);
      const callerKey = api.machines.secrets.open(claimed.sshKeyCiphertext!);
      expect(await login(claimed.id, callerKey)).toBe('agent');
      // Refused although the pod still mounts the pool's Secret: the claim rewrote the copy sshd reads.
      expect(await login(claimed.id, poolKey)).toBe('auth_failed');
      await poolReady();
      const [refill] = await poolRows();
      expect(refill!.id).not.toBe(claimed.id);

      // Pause then restart: the pause's stack update writes the stored (caller's) key into the Secret, and
      // the pod restarted on the same claim installs it from there.
      const podBefore = (await podsOf(claimed.id))[0];
      const claimBefore = await cluster.get(`/api/v1/namespaces/${COMPUTERS_NS}/persistentvolumeclaims/${warm}-home`);
      await api.db.prisma.computer.update({ where: { id: claimed.id }, data: { lastActiveAt: new Date(Date.now() - 2 * 3600_000) } });
      await api.queue.send(computersReapJob, {});
      await waitFor('the claimed computer to pause', async () => (await get(claimed.id)).powerState === 'paused', PROVISION_MS, 250);
      expect(await secretKey(warm)).toBe(claimed.sshPublicKey!.trim());
      expect((await api.db.prisma.computer.findUniqueOrThrow({ where: { id: refill!.id } })).powerState).toBe('running');
      const restart = await api.call('POST', `/api/v0/computers/${claimed.id}/restart`, { as });
      expect(restart.status, JSON.stringify(restart.body)).toBe(200);
      const podsAfter = await podsOf(claimed.id);
      expect(podsAfter).toHaveLength(1);
      expect(podsAfter[0].metadata.uid).not.toBe(podBefore.metadata.uid);
      const claimAfter = await cluster.get(`/api/v1/namespaces/${COMPUTERS_NS}/persistentvolumeclaims/${warm}-home`);
      expect(claimAfter.metadata.uid).toBe(claimBefore.metadata.uid);
      expect(await login(claimed.id, callerKey)).toBe('agent');
      expect(await login(claimed.id, poolKey)).toBe('auth_failed');

      // Everything deleted: the claimed computer by its owner, the pool by size 0.
      expect((await api.call('DELETE', `/api/v0/computers/${claimed.id}`, { as })).status).toBe(204);
      expect((await api.call('PUT', '/api/v0/computers/pool/providers/kubernetes', { as: manager, body: { warmPoolSize: 0 } })).status).toBe(200);
      await waitFor(
        'every computer and teardown gone',
        async () => (await api.db.prisma.computer.count({ where: { OR: [{ deletedAt: null }, { operation: { not: null } }] } })) === 0,
        PROVISION_MS,
        250,
      );
      expect((await kubePool()) ?? { ready: 0, provisioning: 0 }).toMatchObject({ ready: 0, provisioning: 0 });
      for (const gone of [claimed.id, refill!.id]) {
        let left: string[] = [];
        await waitFor(
          () => `nothing left of ${gone}: ${left}`,
          async () => (left = await objects(gone)).length === 0,
          30_000,
          200,
        );
        expect(stackTraces(api.dataDir, gone)).toEqual([]);
      }
    } finally {
      await fresh.close();
    }
  });

  it('the Role is all the provider gets: another namespace is refused to its token', async () => {
    const token = await cluster.serviceAccountToken(NS, 'agentplane');
    const elsewhere = await cluster.api('GET', `/api/v1/namespaces/${NS}/secrets`, { token });
    expect(elsewhere.status).toBe(403);
    const here = await cluster.api('GET', `/api/v1/namespaces/${COMPUTERS_NS}/secrets`, { token });
    expect(here.status).toBe(200);
  });

  it('a worker killed with SIGKILL mid-create, then the computer deleted, leaves nothing on the cluster', { timeout: 240_000 }, async () => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'agentplane-kube-crash-'));
    const clusterFile = path.join(dataDir, 'cluster.json');
    writeFileSync(clusterFile, JSON.stringify(cluster));
    const serverEnv = { ...env, AGENTPLANE_DATA_DIR: dataDir, KUBECONFIG: saKubeconfig, AGENTPLANE_TEST_KUBE_CLUSTER: clusterFile };
    // The server reaches computers' Services through the same DNS and kube-proxy stand-ins.
    const command = [process.execPath, '--import', path.resolve(import.meta.dirname, '../support/kube-network-preload.ts'), CLI, 'serve'];
    let server: ServerProcess | undefined = await startServerProcess(serverEnv, { processGroup: true, command });
    const key = server.firstStartKey!;
    const call = async (method: string, p: string) => {
      const res = await fetch(`${server!.url}${p}`, {
        method,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: method === 'POST' ? JSON.stringify({ name: 'crashy', provider: 'kubernetes' }) : undefined,
      });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : undefined };
    };
    let crashId = '';
    try {
      const created = await call('POST', '/api/v0/computers');
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      crashId = created.body.id;
      // Killed as a container is, the Pulumi CLI and plugin with it, once `pulumi up` has written its first object.
      await waitFor('pulumi up to create the first object', async () => (await objects(crashId)).length > 0, PROVISION_MS, 20);
      expect(await server.stop('SIGKILL')).toBeNull();
      expect((await objects(crashId)).length).toBeGreaterThan(0);

      server = await startServerProcess(serverEnv, { processGroup: true, command });
      expect((await call('DELETE', `/api/v0/computers/${crashId}`)).status).toBe(204);
      let left: string[] = [];
      await waitFor(
        () => `nothing left of ${crashId}: ${left}`,
        async () => (left = await objects(crashId)).length === 0,
        150_000,
        250,
      );
      let traces: string[] = [];
      await waitFor(
        () => `the stack of ${crashId} to go: ${traces}`,
        async () => (traces = stackTraces(dataDir, crashId)).length === 0,
        60_000,
        250,
      );
    } finally {
      await server?.stop('SIGKILL');
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

/**
 * What is left of a computer's stack in the data directory: its workspace, and its state file in
 * the file backend (Pulumi keeps history and backups of a removed stack; those do not count).
 */
function stackTraces(dataDir: string, computerId: string): string[] {
  const found: string[] = [];
  const workspace = path.join(dataDir, 'pulumi', 'workspaces', computerId);
  if (existsSync(workspace)) found.push(workspace);
  const stacks = path.join(dataDir, 'pulumi', 'state', '.pulumi', 'stacks');
  for (const project of existsSync(stacks) ? readdirSync(stacks) : []) {
    const file = path.join(stacks, project, `${computerId}.json`);
    if (existsSync(file)) found.push(file);
  }
  return found;
}
