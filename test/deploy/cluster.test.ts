import { mkdtemp, rm } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EngineEvent } from '@pulumi/pulumi/automation/index.js';
import { kubernetesPluginPath } from '../../src/provisioning/providers/kubernetes/availability.ts';
import { locatePulumiToolchain } from '../../src/provisioning/pulumi/toolchain.ts';
import { kubeBinDir, sharedKubeCluster, type KubeCluster } from '../support/kube-cluster.ts';
import { publishIngresses, type IngressPublisher } from '../support/kube-ingress.ts';
import { devStack } from './dev-stack.ts';
import { skipWithout } from '../support/parts.ts';

/**
 * `pulumi up` of the deploy program's dev stack (in-cluster PostgreSQL) against a real API server
 * with kwok nodes (kube-cluster.ts). kwok makes pods Running and Ready and completes Job pods
 * without running a container, so this shows the objects are accepted, the program converges and
 * the provider's waits end; not that the images start. The program runs inline through the
 * Automation API, as the nodejs language host cannot be built here (scripts/pulumi-deploy-tools.sh).
 */
const toolchain = locatePulumiToolchain();
const kube = kubeBinDir();
const missing =
  kube.missing ??
  (toolchain.available && existsSync(kubernetesPluginPath(toolchain.pulumiHome))
    ? undefined
    : 'the Pulumi CLI or pulumi-resource-kubernetes is missing (bash scripts/pulumi-toolchain.sh)');
const skip = skipWithout('pulumi up of the deploy program', missing);

const suffix = Date.now().toString(36);
const NS = `ap-deploy-${suffix}`;

describe.skipIf(skip)('pulumi up of the dev stack on a Kubernetes API server with kwok nodes', { timeout: 300_000 }, () => {
  let cluster: KubeCluster;
  let dir: string;
  let ingressController: IngressPublisher;

  beforeAll(async () => {
    cluster = await sharedKubeCluster(kube.bin!);
    dir = await mkdtemp(path.join(os.tmpdir(), 'agentplane-deploy-cluster-'));
    // The program's provider takes KUBECONFIG, as `pulumi up` from a shell does.
    process.env.KUBECONFIG = cluster.kubeconfig;
    // Upstream's provider waits for an Ingress's load-balancer address, as on a cluster with a controller.
    ingressController = publishIngresses(cluster, NS, '192.0.2.10');
  });
  afterAll(async () => {
    await ingressController?.stop();
    delete process.env.KUBECONFIG;
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const list = async (p: string) => (await cluster.get(p)).items as any[];
  const names = (items: any[]) => items.map((i) => i.metadata.name).sort();

  it('converges from empty, rolls a new image after a new migration Job, and destroys everything', async () => {
    const stack = await devStack(toolchain, dir, 'cluster', {
      image: 'agentplane:test-1',
      namespace: NS,
      computersNamespace: `${NS}-computers`,
      ingress: JSON.stringify({ host: 'agentplane.test', className: 'nginx' }),
    });

    let started = performance.now();
    const up = await stack.up();
    console.log(
      `deploy program: pulumi up from empty in ${((performance.now() - started) / 1000).toFixed(1)} s (${up.summary.resourceChanges?.create} resources)`,
    );
    expect(up.summary.result).toBe('succeeded');
    expect(up.outputs.apiUrl?.value).toBe('http://agentplane.test');

    const jobs = await list(`/apis/batch/v1/namespaces/${NS}/jobs`);
    expect(jobs).toHaveLength(1);
    expect(jobs[0].status.conditions.find((c: any) => c.type === 'Complete').status).toBe('True');
    const deployment = await cluster.get(`/apis/apps/v1/namespaces/${NS}/deployments/agentplane`);
    expect(deployment.status).toMatchObject({ readyReplicas: 1, updatedReplicas: 1, availableReplicas: 1 });
    expect(deployment.spec.template.spec.containers[0].image).toBe('agentplane:test-1');
    const postgres = await cluster.get(`/apis/apps/v1/namespaces/${NS}/statefulsets/agentplane-postgres`);
    expect(postgres.status.readyReplicas).toBe(1);
    expect(names(await list(`/api/v1/namespaces/${NS}/services`))).toEqual(['agentplane', 'agentplane-postgres']);
    expect(names(await list(`/apis/networking.k8s.io/v1/namespaces/${NS}/ingresses`))).toEqual(['agentplane']);
    expect((await cluster.get(`/api/v1/namespaces/${NS}/persistentvolumeclaims/agentplane-data`)).status.phase).toBe('Bound');
    expect(names(await list(`/apis/rbac.authorization.k8s.io/v1/namespaces/${NS}-computers/roles`))).toEqual(['agentplane-computers']);
    // The ServiceAccount the control plane runs as may do the computer provider's work there, and nothing here.
    const token = await cluster.serviceAccountToken(NS, 'agentplane');
    expect((await cluster.api('GET', `/apis/apps/v1/namespaces/${NS}-computers/statefulsets`, { token })).status).toBe(200);
    expect((await cluster.api('GET', `/api/v1/namespaces/${NS}/secrets`, { token })).status).toBe(403);

    // A new release: the migration Job is replaced (new name) and completes before the Deployments roll.
    await stack.setConfig('agentplane:image', { value: 'agentplane:test-2' });
    const events: EngineEvent[] = [];
    started = performance.now();
    const second = await stack.up({ onEvent: (e) => events.push(e) });
    console.log(`deploy program: pulumi up of a new image in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    expect(second.summary.result).toBe('succeeded');
    const newJobs = await list(`/apis/batch/v1/namespaces/${NS}/jobs`);
    expect(newJobs).toHaveLength(1);
    expect(newJobs[0].metadata.name).not.toBe(jobs[0].metadata.name);
    expect(newJobs[0].spec.template.spec.containers[0].image).toBe('agentplane:test-2');
    expect(newJobs[0].status.conditions.find((c: any) => c.type === 'Complete').status).toBe('True');
    const order = (type: string, op: string, kind: 'pre' | 'out') =>
      events.findIndex((e) => {
        const ev = kind === 'pre' ? e.resourcePreEvent : e.resOutputsEvent;
        return ev?.metadata.type === type && ev.metadata.op === op;
      });
    const jobCreated = order('kubernetes:batch/v1:Job', 'create-replacement', 'out');
    const deploymentUpdate = order('kubernetes:apps/v1:Deployment', 'update', 'pre');
    expect(jobCreated).toBeGreaterThanOrEqual(0);
    expect(deploymentUpdate).toBeGreaterThan(jobCreated);
    const rolled = await cluster.get(`/apis/apps/v1/namespaces/${NS}/deployments/agentplane`);
    expect(rolled.spec.template.spec.containers[0].image).toBe('agentplane:test-2');
    expect(rolled.status).toMatchObject({ readyReplicas: 1, updatedReplicas: 1, replicas: 1 });
    expect(rolled.metadata.generation).toBeGreaterThan(deployment.metadata.generation);

    await stack.destroy();
    for (const ns of [NS, `${NS}-computers`]) {
      expect((await cluster.api('GET', `/api/v1/namespaces/${ns}`)).status).toBe(404);
    }
    await stack.workspace.removeStack('cluster');
  });

  it('stops on bad settings before anything is touched', async () => {
    const stack = await devStack(toolchain, dir, 'bad', { image: 'agentplane:test', namespace: `${NS}-bad`, computersNamespace: `${NS}-bad`, replicas: '0' });
    await expect(stack.up()).rejects.toThrow(/replicas/);
    expect((await cluster.api('GET', `/api/v1/namespaces/${NS}-bad`)).status).toBe(404);
    const state = await stack.exportStack();
    const resources = (state.deployment as { resources?: { type: string }[] }).resources ?? [];
    expect(resources.filter((r) => r.type.startsWith('kubernetes:'))).toEqual([]);
  });
});
