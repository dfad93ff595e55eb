import net from 'node:net';
import type { AddressInfo } from 'node:net';

/**
 * A TCP load balancer on 127.0.0.1, as a Kubernetes Service or an Ingress is in front of the
 * replicas: each connection goes to the first backend that accepts it, in the order given, so a
 * test knows which replica takes an agent's tunnel; a dead backend (connection refused) is
 * skipped, as a Service drops a killed pod.
 */
export async function startTcpBalancer(backends: () => Array<{ host: string; port: number }>): Promise<{ url: string; port: number; close(): Promise<void> }> {
  const open = new Set<net.Socket>();
  const server = net.createServer((client) => {
    open.add(client);
    client.once('close', () => open.delete(client));
    client.on('error', () => {});
    client.pause();
    const candidates = [...backends()];
    const attempt = () => {
      const next = candidates.shift();
      if (!next) return client.destroy();
      const upstream = net.connect({ host: next.host, port: next.port, noDelay: true });
      upstream.once('error', attempt);
      upstream.once('connect', () => {
        upstream.removeListener('error', attempt);
        open.add(upstream);
        upstream.on('error', () => client.destroy());
        client.on('error', () => upstream.destroy());
        upstream.once('close', () => {
          open.delete(upstream);
          client.destroy();
        });
        client.once('close', () => upstream.destroy());
        client.setNoDelay(true);
        client.pipe(upstream);
        upstream.pipe(client);
        client.resume();
      });
    };
    attempt();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    close: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const s of open) s.destroy();
      await closed;
    },
  };
}
