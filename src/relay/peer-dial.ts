import type { Duplex } from 'node:stream';
import WebSocket from 'ws';
import { PassThroughUnsupported, type TunnelUse } from './gateway/index.ts';
import { webSocketDuplex } from './gateway/websocket-stream.ts';
import { Unreachable } from '../ssh/errors.ts';
import { PEER_TOKEN_HEADER, type PeerTokens } from './peer-auth.ts';
import { PEER_RETURN_PATH, peerPath } from './peer-server.ts';
import { RETURN_TOKEN_HEADER } from './protocol.ts';
import { holdWebSocket } from './websocket-messages.ts';

/**
 * Opens a stream to the SSH server of a computer's agent through the replica holding its tunnel.
 * The SSH connection over it still pins the machine's host key end to end, so a replica can
 * carry bytes but never impersonate the machine.
 */
export async function dialPeer(
  peerUrl: string,
  computerId: string,
  tokens: PeerTokens,
  signal: AbortSignal,
  use: TunnelUse = 'control-plane',
): Promise<Duplex> {
  return webSocketDuplex(
    await openPeer(`${peerUrl.replace(/\/+$/, '')}${peerPath(computerId, use)}`, { [PEER_TOKEN_HEADER]: tokens.sign(computerId) }, signal, {
      host: computerId,
      // 501: the holder's agent did not ask for this kind of channel. 403 for a person's or a return: a
      // replica older than those takes the path's suffix for part of the computer id, so the token
      // does not match (during a rolling update); either way the caller falls back.
      refused: (status) => (status === 501 || (status === 403 && use !== 'control-plane') ? new PassThroughUnsupported(computerId, use) : undefined),
      whose: "the replica holding the agent's tunnel",
    }),
  );
}

/** Hands an agent's connection back (see Returns) to the replica whose session waits for it: a WebSocket, held until joined (holdWebSocket). */
export function dialPeerReturn(peerUrl: string, token: string, tokens: PeerTokens, signal: AbortSignal): Promise<WebSocket> {
  return openPeer(`${peerUrl.replace(/\/+$/, '')}${PEER_RETURN_PATH}`, { [PEER_TOKEN_HEADER]: tokens.sign(token), [RETURN_TOKEN_HEADER]: token }, signal, {
    host: 'relay',
    refused: () => undefined,
    whose: 'the replica waiting for the connection back',
  });
}

/** The WebSocket to another replica's peer listener, held as it opens (holdWebSocket) until its user is ready. */
function openPeer(
  url: string,
  headers: Record<string, string>,
  signal: AbortSignal,
  about: { host: string; whose: string; refused(status: number | undefined): Error | undefined },
): Promise<WebSocket> {
  const unreachable = (reason: string, cause?: unknown) => new Unreachable({ host: about.host, port: 22, reason, cause });
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers, perMessageDeflate: false, handshakeTimeout: 10_000 });
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
      res.on('end', () => fail(about.refused(res.statusCode) ?? unreachable(`${about.whose} answered ${res.statusCode}${body ? `: ${body}` : ''}`)));
      res.on('error', () => fail(unreachable(`${about.whose} answered ${res.statusCode}`)));
    });
    ws.once('error', (err) => fail(unreachable(`cannot reach ${about.whose} (${url}): ${err.message}`, err)));
    ws.once('open', () => {
      signal.removeEventListener('abort', onAbort);
      ws.removeAllListeners('error');
      resolve(holdWebSocket(ws));
    });
  });
}
