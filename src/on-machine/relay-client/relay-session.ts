import ssh2, { type Client } from 'ssh2';
import type { Credentials, RelayComputer } from './computer.ts';
import { openComputerRelay } from './relay-stream.ts';
import { useSsh2KeyObjects } from '../../relay/ssh2-key-objects.ts';

export interface RelaySession {
  computer: RelayComputer;
  client: Client;
  /** Settles with the reason once the session is over, however it ended. */
  ended: Promise<string>;
}

/** SSH keepalive towards the relay: a stalled connection is given up after 3 unanswered ones. */
const KEEPALIVE_MS = Number(process.env.AGENTPLANE_RELAY_KEEPALIVE_MS ?? 15_000);

/**
 * An SSH connection to the computer through its relay. The relay lets it through on the WebSocket
 * it opened for this caller's credential, as the computer's remote user; so there is no key to
 * offer (the `none` method) and the host key (the machine's own when its agent ends the
 * connection, else the relay's) is not checked here: what authenticates the relay is the
 * WebSocket's TLS to the control plane's address, the same the API key is sent to.
 */
export async function openRelaySession(creds: Credentials, nameOrId: string): Promise<RelaySession> {
  useSsh2KeyObjects();
  const { computer, relay } = await openComputerRelay(creds, nameOrId);
  const client = new ssh2.Client();
  let lastError: Error | undefined;
  const closed = new Promise<string>((resolve) => {
    client.on('close', () => resolve(lastError ? `the connection to the relay failed: ${lastError.message}` : 'closed'));
  });
  await new Promise<void>((resolve, reject) => {
    client.once('ready', () => resolve());
    client.on('error', (err: Error & { level?: string }) => {
      lastError = err;
      if (err.level === 'client-timeout') relay.stream.destroy();
      reject(new Error(`cannot open an SSH session through the relay: ${err.message}`));
    });
    // Settles nothing once ready; before it, a closed relay is the answer.
    void closed.then(async (reason) => reject(new Error(reason === 'closed' ? await relay.ended : reason)));
    client.connect({
      sock: relay.stream,
      username: 'relay',
      hostVerifier: () => true,
      readyTimeout: 30_000,
      keepaliveInterval: KEEPALIVE_MS,
      keepaliveCountMax: 3,
    });
  });
  // The relay's own reason (key revoked, computer deleted, machine gone) beats a bare "closed".
  const ended = closed.then(async (reason) => (reason === 'closed' ? await relay.ended : reason));
  return { computer, client, ended };
}
