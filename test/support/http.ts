import type { AddressInfo } from 'node:net';
import type { Express } from 'express';

/** Serves an app on a free loopback port for the duration of a test file. */
export async function listenOnFreePort(app: Express): Promise<{ url: string; close(): Promise<void> }> {
  const server = await new Promise<ReturnType<Express['listen']>>((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
