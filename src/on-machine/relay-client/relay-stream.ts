import type { Duplex } from 'node:stream';
import WebSocket from 'ws';
import { webSocketDuplex } from '../../relay/gateway/websocket-stream.ts';
import { clientRelayPath, RELAY_ENDED_CODE } from '../../relay/protocol.ts';
import { findComputer, isComputerId, parseJson, type Credentials, type RelayComputer } from './computer.ts';

export interface RelayStream {
  stream: Duplex;
  /** Why the relay connection ended, once it has: the relay's own reason, or how it was lost. */
  ended: Promise<string>;
}

/**
 * Finds the computer (by the caller's name for it, or its id) and opens its relay. Given an id,
 * the relay's address is known without the lookup (its path under the control plane's address the
 * caller gave), so both go at once: the whole command is a round trip and a lookup shorter. The
 * lookup's refusal (404, 403) is the answer when both fail, as the relay checks the same access.
 */
export async function openComputerRelay(creds: Credentials, nameOrId: string): Promise<{ computer: RelayComputer; relay: RelayStream }> {
  if (!isComputerId(nameOrId)) {
    const computer = await findComputer(creds, nameOrId);
    return { computer, relay: await openRelay(creds, computer) };
  }
  const relayClientUrl = `${creds.url.replace(/^http/, 'ws')}${clientRelayPath(nameOrId)}`;
  const [found, opened] = await Promise.allSettled([findComputer(creds, nameOrId), openRelay(creds, { id: nameOrId, name: nameOrId, relayClientUrl })]);
  if (found.status === 'rejected') {
    if (opened.status === 'fulfilled') opened.value.stream.destroy();
    throw found.reason;
  }
  if (opened.status === 'rejected') throw opened.reason;
  return { computer: found.value, relay: opened.value };
}

/**
 * Opens the computer's relay: a WebSocket to its relayClientUrl with the caller's API key, which
 * the control plane checks like `GET /computers/{id}` before it connects to the machine. Its
 * refusals (401, 403, 404, 503) come back as errors with the API's detail.
 */
function openRelay(creds: Credentials, computer: RelayComputer): Promise<RelayStream> {
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
