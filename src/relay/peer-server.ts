import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import type { Logger } from '../lib/logger.ts';
import { webSocketDuplex } from './gateway/websocket-stream.ts';
import { PEER_TOKEN_HEADER, type PeerTokens } from './peer-auth.ts';
import { splice } from '../lib/splice.ts';

export const PEER_PATH_PREFIX = '/relay/peer/';

export interface PeerServer {
  port: number;
  close(): Promise<void>;
}

/**
 * The internal listener other replicas reach this one's agent tunnels through: a WebSocket per
 * tunnelled SSH connection, authenticated by a peer token (peer-auth.ts). It serves nothing else,
 * listens on a port of its own that the deploy program keeps out of the Service and Ingress, and
 * answers 403 to anyone without a valid token and 404 when the agent is not (or no longer) here.
 */
export async function startPeerServer(opts: {
  host: string;
  port: number;
  /** Opens a stream to the agent's SSH server through this replica's own tunnel. */
  dial(computerId: string, signal: AbortSignal): Promise<Duplex>;
  tokens: PeerTokens;
  log: Logger;
}): Promise<PeerServer> {
  const log = opts.log.child({ component: 'relay-peer' });
  const wss = new WebSocketServer({ noServer: true, perMessageDeflate: false, clientTracking: false });
  const sockets = new Set<Duplex>();
  const server = http.createServer((_req, res) => {
    res.writeHead(426, { 'content-type': 'text/plain' }).end('agentplane relay peer port: WebSocket upgrades from other replicas only\n');
  });
  server.on('upgrade', (req: http.IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => {});
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    const path = (req.url ?? '').split('?')[0]!;
    const computerId = path.startsWith(PEER_PATH_PREFIX) ? decodeURIComponent(path.slice(PEER_PATH_PREFIX.length)) : '';
    const token = req.headers[PEER_TOKEN_HEADER];
    if (!computerId || !opts.tokens.verify(computerId, typeof token === 'string' ? token : undefined)) {
      log.warn({ remote: req.socket.remoteAddress, path }, 'refused a relay peer request without a valid token');
      return socket.end('HTTP/1.1 403 Forbidden\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
    }
    Promise.resolve()
      .then(() => opts.dial(computerId, AbortSignal.timeout(10_000)))
      .then(
        (channel) => {
          if (socket.destroyed) return channel.destroy();
          wss.handleUpgrade(req, socket, head, (ws) => splice(webSocketDuplex(ws), channel));
        },
        (err: Error) => {
          const detail = Buffer.from(err.message);
          socket.end(`HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Type: text/plain\r\nContent-Length: ${detail.length}\r\n\r\n${err.message}`);
        },
      );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => {
      server.removeListener('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  log.info({ port }, 'relay peer listener for other replicas');
  return {
    port,
    close: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const s of sockets) s.destroy();
      await closed;
    },
  };
}
