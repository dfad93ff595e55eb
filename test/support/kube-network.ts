import dns from 'node:dns';
import net from 'node:net';
import { clusterClient, type KubeClusterInfo } from './kube-cluster.ts';

/**
 * Stand-ins for the two parts of a cluster's network the control plane relies on, which the test
 * cluster (no kubelet, no CNI, no kube-proxy, no DNS) lacks. Both read the real API objects:
 *
 * - cluster DNS: in this process, `<service>.<namespace>.svc[.cluster.local]` resolves to the
 *   Service's cluster IP, moved into loopback (10.x.a.b → 127.x.a.b; each cluster has its own ranges);
 * - kube-proxy: on that address, each Service port forwards to a ready endpoint of the Service's
 *   EndpointSlices at its target port, the pod IP moved into loopback too (10.y.z.c → 127.y.z.c),
 *   where the test kubelet (kube-kubelet.ts) runs the pod's sshd.
 *
 * Binding ports below 1024 (the computers' Service port 22) needs root, as the tests that use it are.
 */
export function toLoopback(ip: string): string {
  const parts = ip.split('.');
  if (parts.length !== 4 || parts[0] !== '10') throw new Error(`not a 10/8 cluster address: ${ip}`);
  return ['127', ...parts.slice(1)].join('.');
}

const SERVICE_NAME = /^([a-z0-9-]+)\.([a-z0-9-]+)\.svc(\.cluster\.local)?\.?$/;

export interface ClusterNetwork {
  /** Stops resolving cluster names and closes every forwarding listener. */
  close(): Promise<void>;
}

export function installClusterNetwork(info: KubeClusterInfo): ClusterNetwork {
  const cluster = clusterClient(info);
  const listeners = new Map<string, Promise<net.Server>>();
  const sockets = new Set<net.Socket>();

  /** Where a connection to the Service's port goes now: a ready endpoint at its target port. */
  async function endpointFor(
    namespace: string,
    service: string,
    portName: string | undefined,
    port: number,
  ): Promise<{ host: string; port: number } | undefined> {
    const slices = await cluster.get(
      `/apis/discovery.k8s.io/v1/namespaces/${namespace}/endpointslices?labelSelector=${encodeURIComponent(`kubernetes.io/service-name=${service}`)}`,
    );
    for (const slice of slices.items ?? []) {
      const target = (slice.ports ?? []).find((p: any) => (portName ? p.name === portName : true));
      if (!target) continue;
      for (const ep of slice.endpoints ?? []) {
        if (ep.conditions?.ready === false) continue;
        return { host: toLoopback(ep.addresses[0]), port: target.port ?? port };
      }
    }
    return undefined;
  }

  function forward(namespace: string, service: string, portName: string | undefined, port: number) {
    return (client: net.Socket) => {
      sockets.add(client);
      client.on('close', () => sockets.delete(client));
      client.pause();
      endpointFor(namespace, service, portName, port).then(
        (to) => {
          if (!to) return client.destroy();
          const upstream = net.connect(to.port, to.host);
          sockets.add(upstream);
          upstream.on('close', () => sockets.delete(upstream));
          upstream.on('error', () => client.destroy());
          client.on('error', () => upstream.destroy());
          upstream.on('connect', () => {
            client.pipe(upstream).pipe(client);
            client.resume();
          });
        },
        () => client.destroy(),
      );
    };
  }

  /** The Service's address in loopback, with a forwarding listener on each of its ports. */
  async function serviceAddress(namespace: string, name: string): Promise<string> {
    const svc = await cluster.get(`/api/v1/namespaces/${namespace}/services/${name}`);
    const address = toLoopback(svc.spec.clusterIP);
    await Promise.all(
      (svc.spec.ports ?? []).map((p: any) => {
        const key = `${address}:${p.port}`;
        if (!listeners.has(key)) {
          listeners.set(
            key,
            new Promise<net.Server>((resolve, reject) => {
              const server = net.createServer(forward(namespace, name, p.name, p.port));
              server.once('error', reject);
              server.listen(p.port, address, () => resolve(server));
            }),
          );
        }
        return listeners.get(key);
      }),
    );
    return address;
  }

  const original = dns.lookup;
  const patched = function (this: unknown, hostname: string, options: any, callback?: any) {
    if (typeof options === 'function') {
      callback = options;
      options = {};
    }
    const m = SERVICE_NAME.exec(hostname);
    if (!m) return (original as any).call(this, hostname, options, callback);
    serviceAddress(m[2]!, m[1]!).then(
      (address) => (options?.all ? callback(null, [{ address, family: 4 }]) : callback(null, address, 4)),
      (err: Error) => callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}: ${err.message}`), { code: 'ENOTFOUND', hostname })),
    );
  };
  (dns as { lookup: unknown }).lookup = patched;

  return {
    async close() {
      if (dns.lookup === (patched as unknown)) (dns as { lookup: unknown }).lookup = original;
      for (const s of sockets) s.destroy();
      const servers = await Promise.all([...listeners.values()].map((p) => p.catch(() => undefined)));
      await Promise.all(servers.map((s) => s && new Promise((resolve) => s.close(resolve))));
      listeners.clear();
    },
  };
}
