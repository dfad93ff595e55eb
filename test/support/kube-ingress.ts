import type { KubeCluster } from './kube-cluster.ts';

export interface IngressPublisher {
  stop(): Promise<void>;
}

/**
 * Stands in for an Ingress controller's one visible act: publishing the address it serves an
 * Ingress on in `.status.loadBalancer` (ingress-nginx does it for the Ingresses of its class).
 * Upstream's Kubernetes provider waits for that address before an Ingress counts as created, as
 * it does on a real cluster; the test cluster has no controller. Polls the namespace's Ingresses
 * of `className` and writes `address` into each one's status subresource until stopped.
 */
export function publishIngresses(cluster: KubeCluster, namespace: string, address: string, className = 'nginx'): IngressPublisher {
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      const res = await cluster.api('GET', `/apis/networking.k8s.io/v1/namespaces/${namespace}/ingresses`);
      for (const ingress of res.status === 200 ? res.body.items : []) {
        if (ingress.spec.ingressClassName !== className || ingress.status?.loadBalancer?.ingress?.length) continue;
        await cluster.api('PATCH', `/apis/networking.k8s.io/v1/namespaces/${namespace}/ingresses/${ingress.metadata.name}/status`, {
          body: { status: { loadBalancer: { ingress: [{ ip: address }] } } },
          contentType: 'application/merge-patch+json',
        });
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
    },
  };
}
