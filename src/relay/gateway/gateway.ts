import net from 'node:net';
import type { Duplex } from 'node:stream';
import ssh2, { type AuthContext, type Connection as AgentConnection, type ServerChannel } from 'ssh2';
import type { Logger } from '../../lib/logger.ts';
import { Unreachable } from '../../ssh/errors.ts';
import { describeHostKey, type PresentedHostKey } from '../../ssh/host-keys.ts';
import { FORWARD_BIND_PORT, GATEWAY_SOFTWARE, PEOPLE_BIND_ADDRESS, RETURN_BIND_ADDRESS, type TunnelUse } from './protocol.ts';
import { sampleGauge } from '../../observability/metrics.ts';
import { coalesceWrites } from '../coalesce-writes.ts';
import { useSsh2KeyObjects } from '../ssh2-key-objects.ts';

/** The key an agent presented: OpenSSH public key line (`ssh-ed25519 AAAA...`), fingerprint, type. */
export type PresentedAgentKey = PresentedHostKey;

/** A connected agent: its computer and the key it authenticated with. */
export interface AgentIdentity {
  computerId: string;
  key: PresentedAgentKey;
}

export interface SshGatewayOptions {
  /**
   * A TCP port of its own for agents (0 picks a free one; see address()). Without it the gateway
   * serves only the streams handed to accept(), e.g. WebSocket upgrades on the API port.
   */
  listen?: { host: string; port: number };
  /** The gateway's own host key (OpenSSH or PEM private key); agents pin it on first use. */
  hostKey: string | Buffer;
  /**
   * Is `key` the agent key registered for this computer? Resolve false to refuse it: the agent
   * then stops for good (e.g. the computer was deleted). Throw when the answer is unknown (the
   * database is down): the connection is dropped without an authentication failure, so the
   * agent retries later.
   */
  authorize(computerId: string, key: PresentedAgentKey): Promise<boolean>;
  /**
   * Which of the connected agents are still authorized (their computer's ids), asked every
   * `recheckMs` (default 5 s) for all of them at once: an agent whose key is no longer its
   * computer's (another machine registered as it, the computer was deleted) loses its tunnel, so
   * the newly registered one serves. Throw when the answer is unknown: nobody is dropped.
   */
  stillAuthorized?(agents: AgentIdentity[]): Promise<Set<string>>;
  recheckMs?: number;
  log: Logger;
  /** Keepalive to agents; an agent is dropped after `keepaliveCountMax` unanswered ones. Default 15 s x 3. */
  keepaliveIntervalMs?: number;
  keepaliveCountMax?: number;
  /** An agent must authenticate and ask for forwarding within this time. Default 30 s. */
  handshakeTimeoutMs?: number;
  /** Told when an agent's tunnel is up, and when that tunnel is gone (not when a newer one replaced it). */
  onAgentConnected?(computerId: string): void;
  onAgentDisconnected?(computerId: string): void;
}

export interface SshGateway {
  /** The TCP listener's address; undefined without `listen`. */
  address(): { host: string; port: number } | undefined;
  /**
   * Serves one agent connection arriving on `stream` (a WebSocket's byte stream, say); `remote`
   * names the peer in logs.
   */
  accept(stream: Duplex, remote: string): void;
  /**
   * Opens a channel to the computer's agent: to its SSH server for the control plane's own SSH
   * connection (SshTarget.dial) or for a person's, passed through whole; or to ask it to connect
   * back (`return`). Fails with `Unreachable` when no agent of that computer is connected, and with
   * `PassThroughUnsupported` for a person or a return when the agent did not ask for those.
   */
  dial(computerId: string, signal?: AbortSignal, use?: TunnelUse): Promise<Duplex>;
  isConnected(computerId: string): boolean;
  /** Drops the computer's agent connection, if any (the agent reconnects unless it is refused). */
  disconnect(computerId: string): boolean;
  /** Stops listening and drops every agent. */
  close(): Promise<void>;
}

/** A forwarding an agent asked for: where channels opened to it say they were connected. */
interface Bind {
  bindAddr: string;
  bindPort: number;
}

/** One live agent: its connection and the forwardings it asked for. */
interface Agent {
  readonly computerId: string;
  readonly key: PresentedAgentKey;
  readonly connection: AgentConnection;
  readonly socket: Duplex;
  readonly controlPlane: Bind;
  /** The forwardings for people's connections and returns; none for an agent that did not ask (an older one). */
  readonly others: Map<TunnelUse, Bind>;
}

/** The forwardings an agent may ask for besides the control plane's (any other address). */
const OTHER_BINDS = new Map<string, TunnelUse>([
  [PEOPLE_BIND_ADDRESS, 'person'],
  [RETURN_BIND_ADDRESS, 'return'],
]);

/** The computer's agent did not ask for people's connections (or returns): older; bridge them instead. */
export class PassThroughUnsupported extends Error {
  constructor(computerId: string, use: TunnelUse = 'person') {
    super(`the agent of computer ${computerId} does not take ${use === 'return' ? 'requests to connect back' : "people's SSH connections directly"}`);
    this.name = 'PassThroughUnsupported';
  }
}

const MAX_AUTH_ATTEMPTS = 6;

/**
 * The control plane's SSH gateway: `agentplane agent` processes dial in, authenticate as their
 * computer with their own key pair and ask for remote forwarding; the control plane then reaches
 * each machine through `forwarded-tcpip` channels over that one outbound connection.
 * The gateway offers agents nothing else: no sessions, no port forwarding to anywhere.
 */
export async function createSshGateway(opts: SshGatewayOptions): Promise<SshGateway> {
  useSsh2KeyObjects();
  const log = opts.log.child({ component: 'ssh-gateway' });
  const agents = new Map<string, Agent>();
  const unsample = sampleGauge('relayTunnels', () => agents.size);
  const sockets = new Set<Duplex>();
  const remotes = new WeakMap<Duplex, string>();
  const handshakeTimeoutMs = opts.handshakeTimeoutMs ?? 30_000;
  let closed = false;

  const sshServer = new ssh2.Server({
    hostKeys: [opts.hostKey],
    ident: GATEWAY_SOFTWARE,
    keepaliveInterval: opts.keepaliveIntervalMs ?? 15_000,
    keepaliveCountMax: opts.keepaliveCountMax ?? 3,
  });

  const handshakeTimers = new WeakMap<Duplex, NodeJS.Timeout>();
  function accept(socket: Duplex, remote: string): void {
    if (closed) {
      socket.destroy();
      return;
    }
    sockets.add(socket);
    remotes.set(socket, remote);
    const timer = setTimeout(() => {
      log.warn({ remote }, 'agent did not finish its handshake in time; dropping it');
      socket.destroy();
    }, handshakeTimeoutMs);
    timer.unref();
    handshakeTimers.set(socket, timer);
    socket.once('close', () => {
      clearTimeout(timer);
      sockets.delete(socket);
    });
    socket.on('error', () => {});
    // ssh2 only reads, writes, pauses and ends the socket it is given; any duplex stream does that.
    sshServer.injectSocket(coalesceWrites(socket) as net.Socket);
  }

  const tcp = opts.listen
    ? net.createServer((socket) => {
        // Without TCP_NODELAY Nagle holds back the small packets of every tunnelled command.
        socket.setNoDelay(true);
        accept(socket, `${socket.remoteAddress}:${socket.remotePort}`);
      })
    : undefined;

  sshServer.on('connection', (connection: AgentConnection) => {
    // ssh2 (pinned 1.17.0) keeps the transport in a private field; a dead agent needs destroy().
    const socket = (connection as unknown as { _sock: Duplex })._sock;
    handleAgent(connection, socket);
  });

  function handleAgent(connection: AgentConnection, socket: Duplex): void {
    const remote = remotes.get(socket) ?? 'unknown';
    let computerId: string | undefined;
    let computerKey: PresentedAgentKey | undefined;
    let agent: Agent | undefined;
    const others = new Map<TunnelUse, Bind>();
    let attempts = 0;
    // One lookup per presented key and connection: a client asks about a key, then signs with it.
    const verdicts = new Map<string, Promise<boolean>>();

    connection.on('authentication', (ctx: AuthContext) => {
      if (ctx.method !== 'publickey') return ctx.reject(['publickey']);
      if (++attempts > MAX_AUTH_ATTEMPTS) return socket.destroy();
      const key = describeHostKey(ctx.key.data);
      const cacheKey = `${ctx.username}\n${key.fingerprint}`;
      let verdict = verdicts.get(cacheKey);
      if (!verdict) {
        verdict = ctx.username.length > 0 && ctx.username.length <= 200 ? opts.authorize(ctx.username, key) : Promise.resolve(false);
        verdicts.set(cacheKey, verdict);
      }
      verdict.then(
        (ok) => {
          if (!ok) {
            log.info({ remote, computerId: ctx.username, fingerprint: key.fingerprint }, 'agent key refused');
            return ctx.reject(['publickey']);
          }
          // Without a signature the client only asks whether the key would do.
          if (!ctx.signature || !ctx.blob) return ctx.accept();
          const parsed = ssh2.utils.parseKey(ctx.key.data);
          if (parsed instanceof Error || Array.isArray(parsed) || parsed.verify(ctx.blob, ctx.signature, ctx.hashAlgo) !== true) {
            return ctx.reject(['publickey']);
          }
          computerId = ctx.username;
          computerKey = key;
          ctx.accept();
        },
        (err: unknown) => {
          log.error({ err, remote, computerId: ctx.username }, 'cannot check an agent key; dropping the connection so the agent retries');
          socket.destroy();
        },
      );
    });

    connection.on('request', (accept, reject, name, info) => {
      if (!computerId || !computerKey || (name !== 'tcpip-forward' && name !== 'cancel-tcpip-forward')) return reject?.();
      const bindInfo = info as Bind;
      const bind = { bindAddr: bindInfo.bindAddr, bindPort: bindInfo.bindPort || FORWARD_BIND_PORT };
      const other = OTHER_BINDS.get(bind.bindAddr);
      if (other) {
        if (name === 'tcpip-forward') others.set(other, bind);
        else others.delete(other);
        return accept?.(bind.bindPort);
      }
      if (name === 'cancel-tcpip-forward') {
        if (agent && agents.get(agent.computerId) === agent) agents.delete(agent.computerId);
        agent = undefined;
        return accept?.();
      }
      agent = { computerId, key: computerKey, connection, socket, controlPlane: bind, others };
      const previous = agents.get(computerId);
      agents.set(computerId, agent);
      clearTimeout(handshakeTimers.get(socket));
      accept?.(bind.bindPort);
      if (previous && previous.connection !== connection) {
        log.info({ computerId }, 'a newer agent connection replaces the older one');
        previous.socket.destroy();
      }
      log.info({ computerId, remote }, 'agent connected');
      opts.onAgentConnected?.(computerId);
    });

    connection.on('error', (err: Error & { level?: string }) => {
      // On keepalive timeout ssh2 only end()s a socket whose peer no longer answers.
      if (err.level === 'client-timeout') socket.destroy();
      log.debug({ err, remote, computerId }, 'agent connection error');
    });

    connection.on('close', () => {
      if (agent && agents.get(agent.computerId) === agent) {
        agents.delete(agent.computerId);
        log.info({ computerId: agent.computerId, remote }, 'agent disconnected');
        opts.onAgentDisconnected?.(agent.computerId);
      }
    });
  }

  /** Drops the agent's tunnel if it is still the computer's current one. */
  function drop(agent: Agent, why: string): boolean {
    if (agents.get(agent.computerId) !== agent) return false;
    agents.delete(agent.computerId);
    agent.socket.destroy();
    opts.onAgentDisconnected?.(agent.computerId);
    log.info({ computerId: agent.computerId }, why);
    return true;
  }

  const { stillAuthorized } = opts;
  let rechecking = false;
  const recheck = stillAuthorized
    ? setInterval(() => {
        const connected = [...agents.values()];
        if (rechecking || connected.length === 0) return;
        rechecking = true;
        void stillAuthorized(connected.map((a) => ({ computerId: a.computerId, key: a.key })))
          .then(
            (valid) => {
              for (const agent of connected) {
                if (!valid.has(agent.computerId)) {
                  drop(agent, "agent connection dropped: its key is no longer its computer's (registered again elsewhere, or deleted)");
                }
              }
            },
            (err: unknown) => log.warn({ err }, 'cannot recheck the connected agents; keeping them'),
          )
          .finally(() => (rechecking = false));
      }, opts.recheckMs ?? 5_000)
    : undefined;
  recheck?.unref();

  if (tcp && opts.listen) {
    const { host, port } = opts.listen;
    await new Promise<void>((resolve, reject) => {
      tcp.once('error', reject);
      tcp.listen(port, host, () => {
        tcp.removeListener('error', reject);
        resolve();
      });
    });
    tcp.on('error', (err) => log.error({ err }, 'SSH gateway listener error'));
  }

  const address = (): { host: string; port: number } | undefined => {
    const a = tcp?.address() as net.AddressInfo | null | undefined;
    return a ? { host: a.address, port: a.port } : undefined;
  };
  if (tcp) log.info(address(), 'SSH gateway listening');

  return {
    address,
    accept,

    dial(computerId, signal, use = 'control-plane') {
      const port = address()?.port ?? 0;
      const agent = agents.get(computerId);
      if (!agent) {
        return Promise.reject(
          new Unreachable({
            host: computerId,
            port,
            reason: 'the machine\'s agent is not connected to the relay; is "agentplane agent" running on it?',
          }),
        );
      }
      const bind = use === 'control-plane' ? agent.controlPlane : agent.others.get(use);
      if (!bind) return Promise.reject(new PassThroughUnsupported(computerId, use));
      return new Promise<Duplex>((resolve, reject) => {
        let settled = false;
        const onAbort = () => {
          if (settled) return;
          settled = true;
          reject(signal?.reason instanceof Error ? signal.reason : new Error('aborted'));
        };
        if (signal?.aborted) return onAbort();
        signal?.addEventListener('abort', onAbort, { once: true });
        agent.connection.forwardOut(bind.bindAddr, bind.bindPort, '127.0.0.1', 0, (err: Error | undefined, channel: ServerChannel) => {
          signal?.removeEventListener('abort', onAbort);
          if (settled) {
            if (!err) channel.close();
            return;
          }
          settled = true;
          if (err) return reject(new Unreachable({ host: computerId, port, reason: `the agent refused the tunnel: ${err.message}`, cause: err }));
          // An SSH connection to the machine rides on this channel: one data packet per SSH packet
          // of it, not one per piece ssh2 writes.
          resolve(coalesceWrites(channel));
        });
      });
    },

    isConnected: (computerId) => agents.has(computerId),

    disconnect(computerId) {
      const agent = agents.get(computerId);
      return agent ? drop(agent, 'agent connection dropped on request') : false;
    },

    async close() {
      closed = true;
      clearInterval(recheck);
      agents.clear();
      unsample();
      const stopped = new Promise<void>((resolve) => (tcp ? tcp.close(() => resolve()) : resolve()));
      for (const socket of sockets) socket.destroy();
      await stopped;
    },
  };
}
