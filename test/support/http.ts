import net from 'node:net';
import type { AddressInfo } from 'node:net';
import type { Express } from 'express';

/** Serves an app on a free loopback port for the duration of a test file. */
export async function listenOnFreePort(app: Express): Promise<{ url: string; server: ReturnType<Express['listen']>; close(): Promise<void> }> {
  const server = await new Promise<ReturnType<Express['listen']>>((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    server,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** A TCP port free on `host` right now (closed again before it is returned). */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.listen(0, host, () => {
      const { port } = srv.address() as AddressInfo;
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });
}
