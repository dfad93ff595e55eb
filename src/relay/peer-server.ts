import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import { PassThroughUnsupported, type TunnelUse } from './gateway/index.ts';
import type { Logger } from '../lib/logger.ts';
import { webSocketDuplex } from './gateway/websocket-stream.ts';
import { PEER_TOKEN_HEADER, type PeerTokens } from './peer-auth.ts';
import { splice } from '../lib/splice.ts';

const PEER_PATH_PREFIX = '/relay/peer/';
const PEOPLE_SUFFIX = '/people';

/** Where a replica asks for a stream to a computer's agent: `/relay/peer/<id>`, and `.../people` for a person's. */
export function peerPath(computerId: string, use: TunnelUse): string {
  return `${PEER_PATH_PREFIX}${encodeURIComponent(computerId)}${use === 'person' ? PEOPLE_SUFFIX : ''}`;
}

function parsePeerPath(path: string): { computerId: string; use: TunnelUse } | undefined {
  if (!path.startsWith(PEER_PATH_PREFIX)) return undefined;
  const rest = path.slice(PEER_PATH_PREFIX.length);
  const use: TunnelUse = rest.endsWith(PEOPLE_SUFFIX) ? 'person' : 'control-plane';
  const computerId = decodeURIComponent(use === 'person' ? rest.slice(0, -PEOPLE_SUFFIX.length) : rest);
  return computerId ? { computerId, use } : undefined;
}

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
  dial(computerId: string, signal: AbortSignal, use: TunnelUse): Promise<Duplex>;
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
    const wanted = parsePeerPath(path);
    const token = req.headers[PEER_TOKEN_HEADER];
    if (!wanted || !opts.tokens.verify(wanted.computerId, typeof token === 'string' ? token : undefined)) {
      log.warn({ remote: req.socket.remoteAddress, path }, 'refused a relay peer request without a valid token');
      return socket.end('HTTP/1.1 403 Forbidden\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
    }
    Promise.resolve()
      .then(() => opts.dial(wanted.computerId, AbortSignal.timeout(10_000), wanted.use))
      .then(
        (channel) => {
          if (socket.destroyed) return channel.destroy();
          wss.handleUpgrade(req, socket, head, (ws) => splice(webSocketDuplex(ws), channel));
        },
        (err: Error) => {
          // 501: the agent is here but takes no people's connections (the caller bridges them instead).
          const status = err instanceof PassThroughUnsupported ? '501 Not Implemented' : '404 Not Found';
          const detail = Buffer.from(err.message);
          socket.end(`HTTP/1.1 ${status}\r\nConnection: close\r\nContent-Type: text/plain\r\nContent-Length: ${detail.length}\r\n\r\n${err.message}`);
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
