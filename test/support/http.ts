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

/** A JSON call to a server with one API key, answering the status and the parsed body (undefined when empty). */
export type KeyedCall = (method: string, path: string, body?: unknown) => Promise<{ status: number; body: any }>;

export function keyedCaller(url: string | (() => string), key: string | (() => string)): KeyedCall {
  return async (method, p, body) => {
    const res = await fetch(`${typeof url === 'function' ? url() : url}${p}`, {
      method,
      headers: { authorization: `Bearer ${typeof key === 'function' ? key() : key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  };
}
