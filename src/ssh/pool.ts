import { connect, type Connection } from './connection.ts';
import { Cancelled, ChannelRefused, ConnectionLost, SshError, SshTimeout } from './errors.ts';
import { Semaphore } from './semaphore.ts';
import { DEFAULT_MAX_SESSIONS, portOf, targetKey, type SshTarget } from './target.ts';

export interface PoolOptions {
  /** TCP connect, handshake and authentication of one connection. Default 10 s. */
  connectTimeoutMs?: number;
  /** SSH keepalive; the connection is dropped after `keepaliveCountMax` unanswered ones. Default 10 s x 3. */
  keepaliveIntervalMs?: number;
  keepaliveCountMax?: number;
  /** A connection with no session open for this long is closed. Default 60 s. */
  idleTimeoutMs?: number;
  /**
   * Connections to one target at most, each carrying up to its `maxSessions` channels; the next
   * connection opens only when the open ones are full. Default 4: well inside sshd's MaxStartups
   * (10 unauthenticated at once by default) and 40 channels at sshd's default MaxSessions.
   */
  connectionsPerTarget?: number;
}

export interface PoolStats {
  /** Open connections. */
  connections: number;
  /** Connections opened since the pool was created (reconnects included). */
  opened: number;
  /** Sessions running, and calls queued for a session slot. */
  active: number;
  queued: number;
}

/** One connection to a target (across reconnects) and the channels open on it. */
interface Lane {
  active: number;
  connection?: Connection;
  connecting?: Promise<Connection>;
  idleTimer?: NodeJS.Timeout;
}

/** Everything the pool knows about one target, across reconnects. */
interface Machine {
  /** Channels at once on all its connections; calls beyond wait in FIFO order. */
  readonly sessions: Semaphore;
  /** Channels at once per connection (sshd's MaxSessions). */
  readonly perLane: number;
  readonly lanes: Lane[];
  /** Host key accepted by trust on first use: pinned from then on. */
  trustedFingerprint?: string;
}

/**
 * A few SSH connections per target (`connectionsPerTarget`), shared by many channels; at most
 * `maxSessions` channels at once per connection (sshd's MaxSessions), filled one connection after
 * the other, extra calls wait in FIFO order. A dropped connection is forgotten and the next call
 * on it dials again; idle connections are closed.
 */
export class ConnectionPool {
  readonly #machines = new Map<string, Machine>();
  readonly #opts: Required<PoolOptions>;
  #opened = 0;
  #closed = false;

  constructor(opts: PoolOptions = {}) {
    this.#opts = {
      connectTimeoutMs: opts.connectTimeoutMs ?? 10_000,
      keepaliveIntervalMs: opts.keepaliveIntervalMs ?? 10_000,
      keepaliveCountMax: opts.keepaliveCountMax ?? 3,
      idleTimeoutMs: opts.idleTimeoutMs ?? 60_000,
      connectionsPerTarget: opts.connectionsPerTarget ?? 4,
    };
  }

  /**
   * Runs `fn` holding one session slot on the target's connection (opened on demand). The slot
   * is released when `fn` settles, so `fn` must wait until its channel has closed.
   */
  async session<T>(target: SshTarget, signal: AbortSignal | undefined, fn: (conn: Connection) => Promise<T>): Promise<T> {
    if (this.#closed) throw new ConnectionLost({ host: target.host, port: portOf(target), reason: 'the SSH pool is shut down' });
    const machine = this.#machine(target);
    let release: () => void;
    try {
      release = await machine.sessions.acquire(signal);
    } catch {
      throw abortedError(target, signal);
    }
    // The semaphore guarantees a lane with room: the first, so later connections open only when needed.
    const lane = machine.lanes.find((l) => l.active < machine.perLane)!;
    lane.active++;
    clearTimeout(lane.idleTimer);
    try {
      const conn = await this.#connection(machine, lane, target, signal);
      return await fn(conn);
    } finally {
      lane.active--;
      release();
      if (lane.active === 0) this.#scheduleIdle(lane);
    }
  }

  stats(): PoolStats {
    let connections = 0;
    let active = 0;
    let queued = 0;
    for (const m of this.#machines.values()) {
      for (const lane of m.lanes) {
        if (lane.connection && !lane.connection.closed) connections++;
        active += lane.active;
      }
      queued += m.sessions.waiting;
    }
    return { connections, opened: this.#opened, active, queued };
  }

  /** Closes every connection; later calls fail. Running commands end with `connection_lost`. */
  async close(): Promise<void> {
    this.#closed = true;
    const open: Connection[] = [];
    for (const lane of [...this.#machines.values()].flatMap((m) => m.lanes)) {
      clearTimeout(lane.idleTimer);
      if (lane.connection && !lane.connection.closed) open.push(lane.connection);
      lane.connection = undefined;
    }
    this.#machines.clear();
    await Promise.all(
      open.map(
        (conn) =>
          new Promise<void>((resolve) => {
            const timer = setTimeout(() => conn.destroy(), 1_000);
            conn.onClose(() => {
              clearTimeout(timer);
              resolve();
            });
            conn.end();
          }),
      ),
    );
  }

  #machine(target: SshTarget): Machine {
    const key = targetKey(target);
    let machine = this.#machines.get(key);
    if (!machine) {
      const perLane = target.maxSessions ?? DEFAULT_MAX_SESSIONS;
      const lanes = Array.from({ length: this.#opts.connectionsPerTarget }, () => ({ active: 0 }));
      machine = { sessions: new Semaphore(perLane * lanes.length), perLane, lanes };
      this.#machines.set(key, machine);
    }
    return machine;
  }

  async #connection(machine: Machine, lane: Lane, target: SshTarget, signal: AbortSignal | undefined): Promise<Connection> {
    if (lane.connection && !lane.connection.closed) return lane.connection;
    if (!lane.connecting) {
      // Shared by every caller waiting for this connection; no caller's signal cancels it.
      lane.connecting = connect(target, { ...this.#opts, trustedFingerprint: machine.trustedFingerprint }).then(
        (conn) => {
          lane.connecting = undefined;
          this.#opened++;
          if (this.#closed) {
            conn.end();
            throw new ConnectionLost({ host: target.host, port: portOf(target), reason: 'the SSH pool is shut down' });
          }
          if (!target.hostKeyFingerprint) machine.trustedFingerprint ??= conn.hostKey.fingerprint;
          lane.connection = conn;
          conn.onClose(() => {
            if (lane.connection === conn) lane.connection = undefined;
          });
          return conn;
        },
        (err: unknown) => {
          lane.connecting = undefined;
          throw err;
        },
      );
    }
    if (!signal) return lane.connecting;
    return raceAbort(lane.connecting, signal, () => abortedError(target, signal));
  }

  #scheduleIdle(lane: Lane): void {
    clearTimeout(lane.idleTimer);
    lane.idleTimer = setTimeout(() => {
      if (lane.active > 0 || !lane.connection) return;
      const conn = lane.connection;
      lane.connection = undefined;
      conn.end();
    }, this.#opts.idleTimeoutMs);
    lane.idleTimer.unref();
  }
}

/** The error for a call whose signal fired: a TimeoutError reason means the caller's deadline. */
export function abortedError(target: SshTarget, signal: AbortSignal | undefined, timeoutMs?: number): SshError {
  const host = target.host;
  const port = portOf(target);
  const reason: unknown = signal?.reason;
  if (reason instanceof SshError) return reason;
  if (reason instanceof DOMException && reason.name === 'TimeoutError') return new SshTimeout({ host, port, phase: 'command', ms: timeoutMs ?? 0 });
  return new Cancelled({ host, port, cause: reason });
}

function raceAbort<T>(promise: Promise<T>, signal: AbortSignal, onAbort: () => Error): Promise<T> {
  if (signal.aborted) return Promise.reject(onAbort());
  return new Promise<T>((resolve, reject) => {
    const abort = () => reject(onAbort());
    signal.addEventListener('abort', abort, { once: true });
    promise.then(
      (v) => {
        signal.removeEventListener('abort', abort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', abort);
        reject(e);
      },
    );
  });
}

/**
 * Opens a channel, retrying briefly when sshd refuses: OpenSSH frees a closed session only after
 * it has handled every packet already received, so an open sent right after a close can still
 * count against MaxSessions.
 */
export async function openChannel<T>(target: SshTarget, conn: Connection, open: (cb: (err: Error | undefined, channel: T) => void) => void): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await new Promise<T>((resolve, reject) => open((err, channel) => (err ? reject(err) : resolve(channel))));
    } catch (err) {
      const error = channelOpenError(target, conn, err);
      if (!(error instanceof ChannelRefused) || attempt >= 5) throw error;
      await new Promise((r) => setTimeout(r, 10 * 2 ** attempt));
    }
  }
}

/** Why a channel could not be opened: the connection died, or sshd said no. */
function channelOpenError(target: SshTarget, conn: Connection, err: unknown): SshError {
  const host = target.host;
  const port = portOf(target);
  if (conn.closed) return new ConnectionLost({ host, port, reason: conn.closeReason ?? 'closed', cause: err });
  const message = err instanceof Error ? err.message : String(err);
  if (/no response|not connected|closed/i.test(message)) return new ConnectionLost({ host, port, reason: message, cause: err });
  return new ChannelRefused({ host, port, reason: message, cause: err });
}
