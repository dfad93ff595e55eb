/**
 * Errors of the SSH connection layer. Every error names the machine (`host:port`) and the cause
 * in words a user can act on, so an API can pass `message` straight into a 400's `detail`
 * ("cannot connect to 10.0.0.5:22: connection refused"). Callers branch on `kind`.
 */
export type SshErrorKind =
  | 'unreachable'
  | 'auth_failed'
  | 'host_key_mismatch'
  | 'timeout'
  | 'connection_lost'
  | 'cancelled'
  | 'channel_refused'
  | 'sftp_failed';

export interface SshErrorOptions {
  host: string;
  port: number;
  cause?: unknown;
}

export class SshError extends Error {
  readonly kind: SshErrorKind;
  readonly host: string;
  readonly port: number;

  constructor(kind: SshErrorKind, message: string, opts: SshErrorOptions) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = new.target.name;
    this.kind = kind;
    this.host = opts.host;
    this.port = opts.port;
  }

  get address(): string {
    return formatAddress(this.host, this.port);
  }
}

export function formatAddress(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

/** TCP could not reach sshd: refused, no route, DNS failure, closed before the SSH banner. */
export class Unreachable extends SshError {
  constructor(opts: SshErrorOptions & { reason: string }) {
    super('unreachable', `cannot connect to ${formatAddress(opts.host, opts.port)}: ${opts.reason}`, opts);
  }
}

export class AuthFailed extends SshError {
  readonly username: string;

  constructor(opts: SshErrorOptions & { username: string }) {
    super(
      'auth_failed',
      `cannot connect to ${formatAddress(opts.host, opts.port)}: authentication as "${opts.username}" failed; ` +
        `add the public key to ~${opts.username}/.ssh/authorized_keys on that machine`,
      opts,
    );
    this.username = opts.username;
  }
}

export class HostKeyMismatch extends SshError {
  readonly expected: string;
  readonly presented: string;

  constructor(opts: SshErrorOptions & { expected: string; presented: string }) {
    super(
      'host_key_mismatch',
      `cannot connect to ${formatAddress(opts.host, opts.port)}: host key mismatch: expected ${opts.expected}, ` +
        `the machine presented ${opts.presented}; if the machine was reinstalled on purpose, register its new host key`,
      opts,
    );
    this.expected = opts.expected;
    this.presented = opts.presented;
  }
}

/** Also raised when trust on first use declines the presented key. */
export class HostKeyRejected extends SshError {
  readonly presented: string;

  constructor(opts: SshErrorOptions & { presented: string; reason: string }) {
    super('host_key_mismatch', `cannot connect to ${formatAddress(opts.host, opts.port)}: host key ${opts.presented} not accepted: ${opts.reason}`, opts);
    this.presented = opts.presented;
  }
}

export class SshTimeout extends SshError {
  readonly phase: 'connect' | 'command';

  constructor(opts: SshErrorOptions & { phase: 'connect' | 'command'; ms: number; command?: string }) {
    const what =
      opts.phase === 'connect'
        ? `cannot connect to ${formatAddress(opts.host, opts.port)}: no answer within ${opts.ms} ms`
        : `command on ${formatAddress(opts.host, opts.port)} timed out after ${opts.ms} ms and was stopped`;
    super('timeout', what, opts);
    this.phase = opts.phase;
  }
}

export class ConnectionLost extends SshError {
  constructor(opts: SshErrorOptions & { reason: string }) {
    super('connection_lost', `connection to ${formatAddress(opts.host, opts.port)} lost: ${opts.reason}`, opts);
  }
}

export class Cancelled extends SshError {
  constructor(opts: SshErrorOptions) {
    super('cancelled', `operation on ${formatAddress(opts.host, opts.port)} was cancelled`, opts);
  }
}

/** sshd refused to open a session channel (MaxSessions reached, or sessions disabled). */
export class ChannelRefused extends SshError {
  constructor(opts: SshErrorOptions & { reason: string }) {
    super('channel_refused', `${formatAddress(opts.host, opts.port)} refused a session: ${opts.reason}`, opts);
  }
}

/** A file operation failed on the remote side; `code` is the SFTP status (e.g. 2 = no such file). */
export class SftpFailed extends SshError {
  readonly code: number | undefined;
  readonly path: string;

  constructor(opts: SshErrorOptions & { op: string; path: string; reason: string; code?: number }) {
    super('sftp_failed', `${opts.op} ${opts.path} on ${formatAddress(opts.host, opts.port)} failed: ${opts.reason}`, opts);
    this.code = opts.code;
    this.path = opts.path;
  }
}

const SOCKET_REASONS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  EHOSTUNREACH: 'no route to host',
  ENETUNREACH: 'network unreachable',
  ENOTFOUND: 'host name not found',
  EAI_AGAIN: 'host name lookup failed',
  ECONNRESET: 'connection reset',
  EPIPE: 'connection closed',
  ETIMEDOUT: 'connection timed out',
};

/** A socket error in words: "connection refused" rather than "connect ECONNREFUSED 127.0.0.1:22". */
export function describeSocketError(err: unknown): string {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  if (code && SOCKET_REASONS[code]) return SOCKET_REASONS[code];
  return err instanceof Error ? err.message : String(err);
}
