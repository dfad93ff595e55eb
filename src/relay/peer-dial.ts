import type { Duplex } from 'node:stream';
import WebSocket from 'ws';
import { PassThroughUnsupported, type TunnelUse } from './gateway/index.ts';
import { webSocketDuplex } from './gateway/websocket-stream.ts';
import { Unreachable } from '../ssh/errors.ts';
import { PEER_TOKEN_HEADER, type PeerTokens } from './peer-auth.ts';
import { peerPath } from './peer-server.ts';

/**
 * Opens a stream to the SSH server of a computer's agent through the replica holding its tunnel.
 * The SSH connection over it still pins the machine's host key end to end, so a replica can
 * carry bytes but never impersonate the machine.
 */
export function dialPeer(peerUrl: string, computerId: string, tokens: PeerTokens, signal: AbortSignal, use: TunnelUse = 'control-plane'): Promise<Duplex> {
  const url = `${peerUrl.replace(/\/+$/, '')}${peerPath(computerId, use)}`;
  const unreachable = (reason: string, cause?: unknown) => new Unreachable({ host: computerId, port: 22, reason, cause });
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers: { [PEER_TOKEN_HEADER]: tokens.sign(computerId) }, perMessageDeflate: false, handshakeTimeout: 10_000 });
    const fail = (err: Error) => {
      signal.removeEventListener('abort', onAbort);
      ws.terminate();
      reject(err);
    };
    const onAbort = () => fail(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () =>
        fail(
          res.statusCode === 501
            ? new PassThroughUnsupported(computerId)
            : unreachable(`the replica holding the agent's tunnel answered ${res.statusCode}${body ? `: ${body}` : ''}`),
        ),
      );
      res.on('error', () => fail(unreachable(`the replica holding the agent's tunnel answered ${res.statusCode}`)));
    });
    ws.once('error', (err) => fail(unreachable(`cannot reach the replica holding the agent's tunnel (${peerUrl}): ${err.message}`, err)));
    ws.once('open', () => {
      signal.removeEventListener('abort', onAbort);
      ws.removeAllListeners('error');
      resolve(webSocketDuplex(ws));
    });
  });
}
