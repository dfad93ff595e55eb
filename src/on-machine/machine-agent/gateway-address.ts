import net from 'node:net';
import type { Duplex } from 'node:stream';
import WebSocket from 'ws';
import { webSocketDuplex } from '../../relay/gateway/websocket-stream.ts';
import { formatAddress } from '../../ssh/errors.ts';

/**
 * Where the agent keeps its tunnel: the control plane's relay over a WebSocket upgrade on the API
 * address (`wss://.../api/v0/relay/agent`, what `relayAgentUrl` says by default), or the separate
 * SSH gateway port (`ssh://host:port`). Either carries the same SSH connection.
 */
export type GatewayAddress = { kind: 'ws'; url: string } | { kind: 'ssh'; host: string; port: number };

export function parseGatewayUrl(relayAgentUrl: string): GatewayAddress {
  let url: URL | undefined;
  try {
    url = new URL(relayAgentUrl);
  } catch {
    url = undefined;
  }
  if (url && (url.protocol === 'ws:' || url.protocol === 'wss:') && url.hostname) return { kind: 'ws', url: url.href };
  if (url && url.protocol === 'ssh:' && url.hostname) {
    return { kind: 'ssh', host: url.hostname.replace(/^\[(.*)\]$/, '$1'), port: url.port ? Number(url.port) : 22 };
  }
  throw new Error(`the relay address ${JSON.stringify(relayAgentUrl)} is not a URL like wss://host/api/v0/relay/agent or ssh://host:port`);
}

export function describeGateway(address: GatewayAddress): string {
  return address.kind === 'ws' ? address.url : `ssh://${formatAddress(address.host, address.port)}`;
}

interface DialOptions {
  timeoutMs: number;
  signal: AbortSignal;
  /** Sent with a WebSocket upgrade (a connection back names its token). */
  headers?: Record<string, string>;
}

/**
 * Opens the byte stream the agent speaks SSH over. Resolves once the TCP connection (and, for a
 * WebSocket, the upgrade) is done; rejects with a message naming the address and the cause.
 */
export function dialGateway(address: GatewayAddress, opts: DialOptions): Promise<Duplex> {
  return address.kind === 'ws' ? dialWebSocket(address.url, opts) : dialTcp(address.host, address.port, opts);
}

function dialTcp(host: string, port: number, opts: { timeoutMs: number; signal: AbortSignal }): Promise<Duplex> {
  return new Promise((resolve, reject) => {
    // Without TCP_NODELAY, Nagle holds back the small packets of every tunnelled request.
    const sock = net.connect({ host, port, noDelay: true, timeout: opts.timeoutMs });
    const fail = (err: Error) => {
      opts.signal.removeEventListener('abort', onAbort);
      sock.destroy();
      reject(err);
    };
    const onAbort = () => fail(new Error('aborted'));
    opts.signal.addEventListener('abort', onAbort, { once: true });
    sock.once('timeout', () => fail(new Error(`no connection within ${opts.timeoutMs} ms`)));
    sock.once('error', fail);
    sock.once('connect', () => {
      opts.signal.removeEventListener('abort', onAbort);
      sock.removeListener('error', fail);
      sock.setTimeout(0);
      sock.on('error', () => {});
      resolve(sock);
    });
  });
}

function dialWebSocket(url: string, opts: DialOptions): Promise<Duplex> {
  return new Promise((resolve, reject) => {
    // SSH packets are encrypted: compressing them only costs CPU.
    const ws = new WebSocket(url, { handshakeTimeout: opts.timeoutMs, perMessageDeflate: false, headers: opts.headers });
    const fail = (err: Error) => {
      opts.signal.removeEventListener('abort', onAbort);
      ws.terminate();
      reject(err);
    };
    const onAbort = () => fail(new Error('aborted'));
    opts.signal.addEventListener('abort', onAbort, { once: true });
    ws.once('unexpected-response', (_req, res) => {
      fail(
        new Error(
          `the control plane answered the upgrade with HTTP ${res.statusCode}${res.statusCode === 404 ? ' (is it older than the WebSocket relay? pass --gateway ssh://host:port)' : ''}`,
        ),
      );
    });
    ws.once('error', fail);
    ws.once('open', () => {
      opts.signal.removeEventListener('abort', onAbort);
      ws.removeListener('error', fail);
      resolve(webSocketDuplex(ws));
    });
  });
}
