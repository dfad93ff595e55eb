import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from '../lib/logger.ts';
import { metricsText } from './metrics.ts';

/**
 * GET /metrics on its own port (AGENTPLANE_METRICS_PORT), apart from the API: scraped from inside
 * the cluster, never published through the API's Service or Ingress. Anything else is a 404.
 */
export async function listenForScrapes(port: number, host: string, log: Logger): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (path !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('only GET /metrics is served on this port\n');
      return;
    }
    metricsText().then(
      ({ contentType, text }) => res.writeHead(200, { 'content-type': contentType }).end(req.method === 'HEAD' ? undefined : text),
      (err: unknown) => {
        log.error({ err }, 'collecting metrics failed');
        res.writeHead(500, { 'content-type': 'text/plain' }).end('collecting metrics failed\n');
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const url = `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${address.port}/metrics`;
  log.info({ url }, 'metrics are served');
  return {
    url,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
