import net from 'node:net';
import type { Duplex } from 'node:stream';
import ssh2, { type Client } from 'ssh2';
import { AuthFailed, Cancelled, describeSocketError, HostKeyMismatch, HostKeyRejected, SshError, SshTimeout, Unreachable } from './errors.ts';
import { describeHostKey, normalizeFingerprint, type PresentedHostKey } from './host-keys.ts';
import { portOf, type SshTarget } from './target.ts';

export interface ConnectOptions {
  /** TCP connect plus SSH handshake and authentication. */
  connectTimeoutMs: number;
  keepaliveIntervalMs: number;
  keepaliveCountMax: number;
  /** A fingerprint this target accepted earlier by trust on first use: now it is pinned. */
  trustedFingerprint?: string;
  signal?: AbortSignal;
}

/** One authenticated SSH connection. */
export interface Connection {
  readonly client: Client;
  readonly hostKey: PresentedHostKey;
  /** The server's software version from its banner, e.g. `OpenSSH_9.2p1`. */
  readonly serverSoftware: string;
  readonly closed: boolean;
  /** Why the connection ended, once it has. */
  readonly closeReason: string | undefined;
  /** Calls `listener` once, when the connection is gone (at once if it already is). */
  onClose(listener: (reason: string) => void): () => void;
  end(): void;
  destroy(): void;
}

function dialTcp(target: SshTarget, signal: AbortSignal): Promise<Duplex> {
  return new Promise((resolve, reject) => {
    const sock = net.connect({ host: target.host, port: portOf(target) });
    // Without TCP_NODELAY, Nagle's algorithm holds small SSH packets back: a pooled `true`
    // took ~96 ms instead of ~8 ms on loopback.
    sock.setNoDelay(true);
    const onAbort = () => sock.destroy(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
    signal.addEventListener('abort', onAbort, { once: true });
    sock.once('connect', () => {
      signal.removeEventListener('abort', onAbort);
      sock.removeAllListeners('error');
      resolve(sock);
    });
    sock.once('error', (err) => {
      signal.removeEventListener('abort', onAbort);
      reject(err);
    });
  });
}

/** ssh2 keeps the banner's software version in a private field; ssh2 is pinned to 1.17.0. */
function serverSoftwareOf(client: Client): string {
  return (client as unknown as { _remoteVer?: string })._remoteVer ?? '';
}

/**
 * Opens and authenticates one connection, verifying the host key. Every failure is an SshError
 * naming host, port and cause.
 */
export async function connect(target: SshTarget, opts: ConnectOptions): Promise<Connection> {
  const host = target.host;
  const port = portOf(target);
  const started = Date.now();
  const deadline = AbortSignal.timeout(opts.connectTimeoutMs);
  const signal = opts.signal ? AbortSignal.any([opts.signal, deadline]) : deadline;
  const abortError = (): SshError =>
    opts.signal?.aborted ? new Cancelled({ host, port }) : new SshTimeout({ host, port, phase: 'connect', ms: opts.connectTimeoutMs });

  let sock: Duplex;
  try {
    sock = target.dial ? await target.dial(signal) : await dialTcp(target, signal);
  } catch (err) {
    if (signal.aborted) throw abortError();
    if (err instanceof SshError) throw err;
    throw new Unreachable({ host, port, reason: describeSocketError(err), cause: err });
  }
  if (signal.aborted) {
    sock.destroy();
    throw abortError();
  }
  if (sock instanceof net.Socket) sock.setNoDelay(true);

  const client = new ssh2.Client();
  let hostKey: PresentedHostKey | undefined;
  let hostKeyError: SshError | undefined;
  const expected = target.hostKeyFingerprint ?? opts.trustedFingerprint;

  const hostVerifier = (blob: Buffer, verify: (ok: boolean) => void): void => {
    const presented = describeHostKey(blob);
    hostKey = presented;
    if (expected) {
      const ok = normalizeFingerprint(expected) === presented.fingerprint;
      if (!ok) hostKeyError = new HostKeyMismatch({ host, port, expected: normalizeFingerprint(expected), presented: presented.fingerprint });
      verify(ok);
      return;
    }
    if (!target.onFirstHostKey) {
      hostKeyError = new HostKeyRejected({
        host,
        port,
        presented: presented.fingerprint,
        reason: 'no host key is pinned for this machine and no trust-on-first-use callback was given',
      });
      verify(false);
      return;
    }
    Promise.resolve()
      .then(() => target.onFirstHostKey?.(presented))
      .then(
        (accepted) => {
          if (accepted === false) hostKeyError = new HostKeyRejected({ host, port, presented: presented.fingerprint, reason: 'refused by the caller' });
          verify(accepted !== false);
        },
        (err: unknown) => {
          hostKeyError = new HostKeyRejected({
            host,
            port,
            presented: presented.fingerprint,
            reason: err instanceof Error ? err.message : String(err),
            cause: err,
          });
          verify(false);
        },
      );
  };

  let closeReason: string | undefined;
  let lastError: Error | undefined;
  const closeListeners = new Set<(reason: string) => void>();

  await new Promise<void>((resolve, reject) => {
    let settled = false;
    const fail = (err: SshError) => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', onAbort);
      client.removeListener('ready', onReady);
      sock.destroy();
      reject(err);
    };
    const onAbort = () => fail(abortError());
    const onReady = () => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', onAbort);
      resolve();
    };
    signal.addEventListener('abort', onAbort, { once: true });
    client.once('ready', onReady);
    client.on('error', (err: Error & { level?: string }) => {
      lastError = err;
      // On keepalive timeout ssh2 may only end() a socket the peer no longer answers on.
      if (err.level === 'client-timeout') sock.destroy();
      if (settled) return;
      if (hostKeyError) return fail(hostKeyError);
      if (err.level === 'client-authentication') return fail(new AuthFailed({ host, port, username: target.username, cause: err }));
      if (err.level === 'client-timeout') return fail(abortError());
      fail(new Unreachable({ host, port, reason: describeSocketError(err), cause: err }));
    });
    client.on('close', () => {
      closeReason ??= lastError ? describeSocketError(lastError) : 'closed by the remote side';
      for (const listener of closeListeners) listener(closeReason);
      closeListeners.clear();
      if (hostKeyError) return fail(hostKeyError);
      fail(new Unreachable({ host, port, reason: 'the connection closed during the SSH handshake (sshd busy or refusing connections?)' }));
    });
    client.connect({
      sock,
      host,
      port,
      username: target.username,
      privateKey: target.privateKey,
      passphrase: target.passphrase,
      hostVerifier,
      readyTimeout: Math.max(1, opts.connectTimeoutMs - (Date.now() - started)),
      keepaliveInterval: opts.keepaliveIntervalMs,
      keepaliveCountMax: opts.keepaliveCountMax,
    });
  });

  const presentedKey = hostKey;
  if (!presentedKey) {
    sock.destroy();
    throw new Unreachable({ host, port, reason: 'the server presented no host key' });
  }
  return {
    client,
    hostKey: presentedKey,
    serverSoftware: serverSoftwareOf(client),
    get closed() {
      return closeReason !== undefined;
    },
    get closeReason() {
      return closeReason;
    },
    onClose(listener) {
      if (closeReason !== undefined) {
        listener(closeReason);
        return () => {};
      }
      closeListeners.add(listener);
      return () => closeListeners.delete(listener);
    },
    end() {
      closeReason ??= 'closed by the pool';
      client.end();
    },
    destroy() {
      closeReason ??= 'closed by the pool';
      sock.destroy();
    },
  };
}
