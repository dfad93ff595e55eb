import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import { PassThroughUnsupported, type TunnelUse } from './gateway/index.ts';
import type { Logger } from '../lib/logger.ts';
import { webSocketDuplex } from './gateway/websocket-stream.ts';
import { holdWebSocket } from './websocket-messages.ts';
import { PEER_TOKEN_HEADER, type PeerTokens } from './peer-auth.ts';
import { splice } from '../lib/splice.ts';
import { RETURN_TOKEN_HEADER } from './protocol.ts';
import type { Returns } from './returns.ts';

const PEER_PATH_PREFIX = '/relay/peer/';
/** What follows the computer id for a channel that is not the control plane's own connection. */
const SUFFIXES = new Map<TunnelUse, string>([
  ['person', '/people'],
  ['return', '/return'],
]);

/** Where another replica hands over an agent's connection back (its token in RETURN_TOKEN_HEADER). */
export const PEER_RETURN_PATH = '/relay/returns';

/** Where a replica asks for a channel to a computer's agent: `/relay/peer/<id>`, with a suffix for people's and returns. */
export function peerPath(computerId: string, use: TunnelUse): string {
  return `${PEER_PATH_PREFIX}${encodeURIComponent(computerId)}${SUFFIXES.get(use) ?? ''}`;
}

function parsePeerPath(path: string): { computerId: string; use: TunnelUse } | undefined {
  if (!path.startsWith(PEER_PATH_PREFIX)) return undefined;
  const rest = path.slice(PEER_PATH_PREFIX.length);
  const [use, suffix] = [...SUFFIXES].find(([, end]) => rest.endsWith(end)) ?? ['control-plane' as const, ''];
  const computerId = decodeURIComponent(rest.slice(0, rest.length - suffix.length));
  return computerId ? { computerId, use } : undefined;
}

export interface PeerServer {
  port: number;
  close(): Promise<void>;
}

/**
 * The internal listener other replicas reach this one's agent tunnels through: a WebSocket per
 * tunnelled channel, authenticated by a peer token (peer-auth.ts); and where they hand over an
 * agent's connection back that one of this replica's people's sessions waits for. It serves
 * nothing else, listens on a port of its own that the deploy program keeps out of the Service and
 * Ingress, and answers 403 to anyone without a valid token and 404 when the agent is not (or no
 * longer) here, or no session waits.
 */
export async function startPeerServer(opts: {
  host: string;
  port: number;
  /** Opens a stream to the agent's SSH server through this replica's own tunnel. */
  dial(computerId: string, signal: AbortSignal, use: TunnelUse): Promise<Duplex>;
  /** The people's sessions of this replica waiting for an agent's connection back. */
  returns?: Returns;
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
    const header = (name: string) => (typeof req.headers[name] === 'string' ? (req.headers[name] as string) : undefined);
    const refuse = (status: string, detail = '') =>
      socket.end(`HTTP/1.1 ${status}\r\nConnection: close\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(detail)}\r\n\r\n${detail}`);
    const wanted = path === PEER_RETURN_PATH ? { returnToken: header(RETURN_TOKEN_HEADER) ?? '' } : parsePeerPath(path);
    const signed = wanted && ('returnToken' in wanted ? wanted.returnToken : wanted.computerId);
    if (!wanted || !signed || !opts.tokens.verify(signed, header(PEER_TOKEN_HEADER))) {
      log.warn({ remote: req.socket.remoteAddress, path }, 'refused a relay peer request without a valid token');
      return refuse('403 Forbidden');
    }
    if ('returnToken' in wanted) {
      const { returnToken } = wanted;
      if (!opts.returns?.waitsFor(returnToken)) return refuse('404 Not Found', 'no relay session here waits for this connection');
      wss.handleUpgrade(req, socket, head, (ws) => {
        if (!opts.returns?.deliver(returnToken, holdWebSocket(ws))) ws.terminate();
      });
      return;
    }
    const { computerId, use } = wanted;
    Promise.resolve()
      .then(() => opts.dial(computerId, AbortSignal.timeout(10_000), use))
      .then(
        (channel) => {
          if (socket.destroyed) return channel.destroy();
          wss.handleUpgrade(req, socket, head, (ws) => splice(webSocketDuplex(ws), channel));
        },
        // 501: the agent is here but did not ask for this kind of channel (the caller falls back).
        (err: Error) => refuse(err instanceof PassThroughUnsupported ? '501 Not Implemented' : '404 Not Found', err.message),
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
