import type { Duplex } from 'node:stream';
import WebSocket from 'ws';
import { webSocketDuplex } from '../../relay/gateway/websocket-stream.ts';
import { RELAY_ENDED_CODE } from '../../relay/protocol.ts';
import { parseJson, type Credentials, type RelayComputer } from './computer.ts';

export interface RelayStream {
  stream: Duplex;
  /** Why the relay connection ended, once it has: the relay's own reason, or how it was lost. */
  ended: Promise<string>;
}

/**
 * Opens the computer's relay: a WebSocket to its relayClientUrl with the caller's API key, which
 * the control plane checks like `GET /computers/{id}` before it connects to the machine. Its
 * refusals (401, 403, 404, 503) come back as errors with the API's detail.
 */
export function openRelay(creds: Credentials, computer: RelayComputer): Promise<RelayStream> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(computer.relayClientUrl, {
      headers: { authorization: `Bearer ${creds.apiKey}` },
      perMessageDeflate: false,
      handshakeTimeout: 30_000,
    });
    ws.once('unexpected-response', (_req, res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => {
        const body = parseJson(text) as { detail?: string } | undefined;
        reject(new Error(`the relay refused computer "${computer.name}" (${res.statusCode}): ${body?.detail ?? (text.slice(0, 200) || res.statusMessage)}`));
        ws.terminate();
      });
    });
    ws.once('error', (err) => reject(new Error(`cannot open the relay at ${computer.relayClientUrl}: ${err.message}`)));
    ws.once('open', () => {
      ws.removeAllListeners('error');
      ws.on('error', () => {});
      const ended = new Promise<string>((settle) => {
        ws.once('close', (code, reason) => {
          settle(
            code === RELAY_ENDED_CODE
              ? `the relay ended the session: ${reason.toString()}`
              : `the connection to the relay was lost: the control plane went away or the network dropped (WebSocket close ${code}${reason.length ? `: ${reason.toString()}` : ''})`,
          );
        });
      });
      resolve({ stream: webSocketDuplex(ws), ended });
    });
  });
}
