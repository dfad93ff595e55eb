import type { Duplex } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import ssh2, { type TcpConnectionDetails } from 'ssh2';
import { coalesceWrites } from '../../relay/coalesce-writes.ts';
import { FORWARD_BIND_ADDRESS, FORWARD_BIND_PORT, PEOPLE_BIND_ADDRESS, RETURN_BIND_ADDRESS, type SessionUse } from '../../relay/gateway/protocol.ts';
import { useSsh2KeyObjects } from '../../relay/ssh2-key-objects.ts';
import { describeSocketError } from '../../ssh/errors.ts';
import { describeHostKey, normalizeFingerprint } from '../../ssh/host-keys.ts';
import { describeGateway, dialGateway, type GatewayAddress } from './gateway-address.ts';

export interface TunnelOptions {
  gateway: GatewayAddress;
  /** The agent authenticates as its computer: user name = computer id, key = its client key. */
  computerId: string;
  clientKey: string;
  /** The gateway host key's fingerprint, if pinned; without one the first key seen is pinned. */
  gatewayHostKey: string | undefined;
  /** Persists the fingerprint pinned on first use. */
  pinGatewayHostKey(fingerprint: string): Promise<void>;
  /** Each stream is one SSH connection to serve: the control plane's, or a person's passed through. */
  onStream(stream: Duplex, use: SessionUse): void;
  /**
   * Asked to connect back to the relay with this token, for one person's connection; given only
   * when the agent can (its relay is a WebSocket), and then the agent asks for returns.
   */
  onReturn?(token: string): void;
  log(line: string): void;
  /** Delay before reconnecting doubles from `initialMs` up to `maxMs`, with jitter. Default 0.5 s to 30 s. */
  backoff?: { initialMs?: number; maxMs?: number };
  /** Default 15 s x 3: a gateway silent for 45 s counts as gone. */
  keepaliveIntervalMs?: number;
  keepaliveCountMax?: number;
  connectTimeoutMs?: number;
  /** Called each time the gateway has accepted the forwarding (tests wait on it). */
  onConnected?(): void;
}

/** Retrying cannot help: the gateway refused the agent's key, or presented a different host key. */
export class TunnelRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TunnelRefused';
  }
}

/**
 * Keeps one outbound SSH connection to the gateway, asking it to forward the control plane's
 * connections back; reconnects with backoff after every drop. Resolves when `signal` aborts;
 * rejects with TunnelRefused when the gateway refuses the agent or its host key changed.
 */
export async function runTunnel(opts: TunnelOptions, signal: AbortSignal): Promise<void> {
  useSsh2KeyObjects();
  const initialMs = opts.backoff?.initialMs ?? 500;
  const maxMs = opts.backoff?.maxMs ?? 30_000;
  const where = describeGateway(opts.gateway);
  const trust: Trust = { pinned: opts.gatewayHostKey ? normalizeFingerprint(opts.gatewayHostKey) : undefined };
  let failures = 0;

  while (!signal.aborted) {
    const result = await connectOnce(opts, trust, signal);
    if (signal.aborted) return;
    // A connection that held for a while starts the backoff over; one dropped at once (another
    // agent with the same key keeps replacing it, say) backs off like a failure.
    failures = result.establishedMs >= STABLE_MS ? 0 : failures + 1;
    const base = Math.min(maxMs, initialMs * 2 ** Math.min(Math.max(failures - 1, 0), 30));
    // Jitter in [base/2, base]: after a gateway restart its agents must not all return at once.
    const delay = Math.round(base / 2 + (Math.random() * base) / 2);
    opts.log(
      `${result.established ? 'lost the connection to' : 'cannot connect to'} the relay at ${where}: ${result.reason}; retrying in ${(delay / 1000).toFixed(1)} s`,
    );
    await sleep(delay, undefined, { signal }).catch(() => {});
  }
}

interface Attempt {
  /** The gateway accepted the agent and its forwarding. */
  established: boolean;
  /** How long the connection was established; 0 if never. */
  establishedMs: number;
  reason: string;
}

const STABLE_MS = 10_000;

const timeoutMsOf = (opts: TunnelOptions): number => opts.connectTimeoutMs ?? 20_000;

/** The gateway host key pinned so far, shared by all attempts. */
interface Trust {
  pinned: string | undefined;
}

/** One connection, from dialling to its end. Rejects only with TunnelRefused. */
async function connectOnce(opts: TunnelOptions, trust: Trust, signal: AbortSignal): Promise<Attempt> {
  const timeoutMs = timeoutMsOf(opts);
  let sock: Duplex;
  try {
    sock = await dialGateway(opts.gateway, { timeoutMs, signal });
  } catch (err) {
    return { established: false, establishedMs: 0, reason: describeSocketError(err) };
  }
  return runConnection(opts, trust, sock, signal);
}

/** The SSH connection over a dialled stream, until it ends. */
function runConnection(opts: TunnelOptions, trust: Trust, sock: Duplex, signal: AbortSignal): Promise<Attempt> {
  const where = describeGateway(opts.gateway);
  return new Promise<Attempt>((resolve, reject) => {
    let established = false;
    let establishedAt = 0;
    let refused: TunnelRefused | undefined;
    let lastError: Error | undefined;
    let firstSeen: string | undefined;
    const client = new ssh2.Client();
    if (signal.aborted) sock.destroy();

    const onAbort = () => {
      client.end();
      // A gateway that no longer answers would keep a polite end() waiting.
      setTimeout(() => sock.destroy(), 1_000).unref();
    };
    signal.addEventListener('abort', onAbort, { once: true });

    client.on('ready', () => {
      // People's forwarding first: a gateway older than it keeps only the last forwarding asked
      // for, which must be the control plane's. Refused, people's sessions are bridged instead.
      client.forwardIn(PEOPLE_BIND_ADDRESS, FORWARD_BIND_PORT, (err) => {
        if (err) opts.log(`the relay takes no people's connections directly (${err.message}); it bridges them`);
      });
      if (opts.onReturn) client.forwardIn(RETURN_BIND_ADDRESS, FORWARD_BIND_PORT, () => {});
      client.forwardIn(FORWARD_BIND_ADDRESS, FORWARD_BIND_PORT, async (err) => {
        if (err) {
          lastError = new Error(`the gateway refused forwarding: ${err.message}`);
          client.end();
          return;
        }
        // Trust on first use: pin the key of the first connection that fully worked.
        if (firstSeen && !trust.pinned) {
          try {
            await opts.pinGatewayHostKey(firstSeen);
          } catch (e) {
            lastError = new Error(`cannot store the gateway host key: ${(e as Error).message}`);
            client.end();
            return;
          }
          trust.pinned = firstSeen;
          opts.log(`pinned the SSH gateway's host key ${firstSeen}`);
        }
        established = true;
        establishedAt = Date.now();
        opts.log(`connected to the relay at ${where} as computer ${opts.computerId}`);
        opts.onConnected?.();
      });
    });

    client.on('tcp connection', (details: TcpConnectionDetails, accept, reject) => {
      const { onReturn } = opts;
      if (details.destIP === RETURN_BIND_ADDRESS && onReturn) return readReturnToken(accept(), onReturn);
      const use: SessionUse | undefined =
        details.destIP === FORWARD_BIND_ADDRESS ? 'control-plane' : details.destIP === PEOPLE_BIND_ADDRESS ? 'person' : undefined;
      if (!use) return reject();
      // The agent's SSH server writes each packet in pieces: one data packet per SSH packet.
      opts.onStream(coalesceWrites(accept()), use);
    });

    client.on('error', (err: Error & { level?: string }) => {
      lastError = err;
      if (err.level === 'client-timeout') sock.destroy();
      if (err.level === 'client-authentication') {
        refused = new TunnelRefused(
          `the relay at ${where} refused this agent's key for computer ${opts.computerId}; ` +
            'the computer was probably deleted, or another machine registered as it: remove the agent state directory and run the agent again to register anew',
        );
      }
    });

    client.on('close', () => {
      signal.removeEventListener('abort', onAbort);
      sock.destroy();
      if (refused) return reject(refused);
      resolve({
        established,
        establishedMs: established ? Date.now() - establishedAt : 0,
        reason: lastError ? describeSocketError(lastError) : 'closed by the gateway',
      });
    });

    client.connect({
      sock: coalesceWrites(sock),
      username: opts.computerId,
      privateKey: opts.clientKey,
      readyTimeout: timeoutMsOf(opts),
      keepaliveInterval: opts.keepaliveIntervalMs ?? 15_000,
      keepaliveCountMax: opts.keepaliveCountMax ?? 3,
      hostVerifier: (blob: Buffer) => {
        const presented = describeHostKey(blob).fingerprint;
        if (!trust.pinned) {
          firstSeen = presented;
          return true;
        }
        if (presented === trust.pinned) return true;
        refused = new TunnelRefused(
          `the relay at ${where} presented host key ${presented}, but ${trust.pinned} is pinned; ` +
            `if the control plane's gateway key was replaced on purpose, run the agent with --gateway-host-key ${presented}`,
        );
        return false;
      },
    });
  });
}

/** The longest request to connect back: a token is about 60 characters. */
const MAX_RETURN_REQUEST = 256;

/** A request to connect back: one line, the token, then the end of the channel. */
function readReturnToken(channel: Duplex, onReturn: (token: string) => void): void {
  let text = '';
  channel.on('error', () => {});
  channel.on('data', (chunk: Buffer) => {
    text += chunk.toString('latin1');
    if (text.length > MAX_RETURN_REQUEST) channel.destroy();
  });
  channel.once('end', () => {
    channel.end();
    const token = text.trim();
    if (/^[\w.-]+$/.test(token)) onReturn(token);
  });
}
