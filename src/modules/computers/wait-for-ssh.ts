import { setTimeout as delay } from 'node:timers/promises';
import { isTransientSshError, SshError, type SshClient, type SshTarget } from '../../ssh/index.ts';

const ATTEMPT_TIMEOUT_MS = 5_000;
const RETRY_MS = 200;

/**
 * Waits until the machine's sshd completes a handshake with the pinned host key and accepts the
 * key. What the SSH layer does not call transient (a different host key) fails at once: it is
 * never a matter of waiting.
 */
export async function waitForSsh(ssh: SshClient, target: SshTarget, opts: { signal: AbortSignal; timeoutMs: number }): Promise<void> {
  const until = Date.now() + opts.timeoutMs;
  for (;;) {
    try {
      await ssh.hostKey(target, { signal: AbortSignal.any([opts.signal, AbortSignal.timeout(ATTEMPT_TIMEOUT_MS)]) });
      return;
    } catch (err) {
      if (opts.signal.aborted || !(err instanceof SshError) || !isTransientSshError(err)) throw err;
      if (Date.now() > until)
        throw new SshError(err.kind, `SSH did not answer within ${opts.timeoutMs / 1000} s: ${err.message}`, { host: err.host, port: err.port, cause: err });
      await delay(RETRY_MS, undefined, { signal: opts.signal });
    }
  }
}
