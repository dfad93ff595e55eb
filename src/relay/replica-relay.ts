import type { WebSocket } from 'ws';
import type { Db } from '../db/client.ts';
import { newId } from '../lib/ids.ts';
import type { Logger } from '../lib/logger.ts';
import { createSshGateway, type AgentIdentity, type PresentedAgentKey, type SshGateway } from './gateway/index.ts';
import { formatAddress } from '../ssh/errors.ts';
import { createAgentDialer, type AgentDialer } from './agent-dialer.ts';
import type { PeerTokens } from './peer-auth.ts';
import { startPeerServer, type PeerServer } from './peer-server.ts';
import { dialPeerReturn } from './peer-dial.ts';
import { createReturns, replicaOfReturn } from './returns.ts';
import { findReplicaPeer } from './tunnel-holder.ts';
import { startTunnelLeases, type TunnelLeases } from './tunnel-leases.ts';
import { holdWebSocket, spliceWebSockets } from './websocket-messages.ts';

export interface ReplicaRelayOptions {
  db: Db;
  log: Logger;
  /** The address listeners bind to. */
  host: string;
  /** The gateway's host key, the same on every replica (agents pin it). */
  hostKey: string;
  authorize(computerId: string, key: PresentedAgentKey): Promise<boolean>;
  /** The connected agents still authorized, rechecked every few seconds (see SshGatewayOptions). */
  stillAuthorized(agents: AgentIdentity[]): Promise<Set<string>>;
  /** The separate SSH gateway port, for agents started with `--gateway ssh://host:port`. */
  sshGatewayPort?: number;
  /** Routing between replicas: the peer listener's port and the name other replicas dial it by. */
  peer?: { port: number; advertisedHost: string; tokens: PeerTokens; leaseMs?: number; renewMs?: number };
}

export interface ReplicaRelay {
  gateway: SshGateway;
  dialer: AgentDialer;
  /** Present when replicas route to each other. */
  leases?: TunnelLeases;
  /**
   * Where an agent's connection back (token from its upgrade request) goes: to the person's
   * session of this replica waiting for it, or through the peer listener of the replica whose
   * session does. Undefined when nobody waits for the token. Serve it in the upgrade's callback,
   * before anything can arrive on the WebSocket (see holdWebSocket).
   */
  acceptReturn(token: string): Promise<{ serve(ws: WebSocket): void; cancel(): void } | undefined>;
  close(): Promise<void>;
}

/**
 * The agent side of the relay in a serving replica: the SSH gateway every agent connection
 * reaches (over a WebSocket upgrade on the API port, or the optional SSH port), and, with several
 * replicas, the lease table and the peer listener through which the others reach these tunnels.
 */
export async function startReplicaRelay(opts: ReplicaRelayOptions): Promise<ReplicaRelay> {
  const replicaId = newId('rpl');
  const returns = createReturns(replicaId);
  let gateway: SshGateway | undefined;
  let peerServer: PeerServer | undefined;
  let leases: TunnelLeases | undefined;
  const { peer } = opts;
  if (peer) {
    // Listening before the gateway takes agents, so the lease can name its address.
    peerServer = await startPeerServer({
      host: opts.host,
      port: peer.port,
      tokens: peer.tokens,
      log: opts.log,
      returns,
      dial: (computerId, signal, use) => gateway!.dial(computerId, signal, use),
    });
    leases = await startTunnelLeases({
      db: opts.db,
      replicaId,
      peerUrl: `ws://${formatAddress(peer.advertisedHost, peerServer.port)}`,
      log: opts.log,
      leaseMs: peer.leaseMs,
      renewMs: peer.renewMs,
      onComputerGone: (computerId) => gateway?.disconnect(computerId),
    });
  }
  gateway = await createSshGateway({
    listen: opts.sshGatewayPort === undefined ? undefined : { host: opts.host, port: opts.sshGatewayPort },
    hostKey: opts.hostKey,
    log: opts.log,
    authorize: opts.authorize,
    stillAuthorized: opts.stillAuthorized,
    onAgentConnected: (computerId) => leases?.held(computerId),
    onAgentDisconnected: (computerId) => leases?.released(computerId),
  });
  const dialer = createAgentDialer({ local: gateway, peers: peer && { db: opts.db, tokens: peer.tokens, replicaId }, returns, log: opts.log });
  return {
    gateway,
    dialer,
    leases,
    async acceptReturn(token) {
      if (returns.waitsFor(token)) {
        return {
          serve: (ws) => {
            if (!returns.deliver(token, holdWebSocket(ws))) ws.terminate();
          },
          cancel: () => {},
        };
      }
      const waiting = replicaOfReturn(token);
      const peerUrl = peer && waiting && waiting !== replicaId ? await findReplicaPeer(opts.db, waiting) : undefined;
      if (!peer || !peerUrl) return undefined;
      const upstream = await dialPeerReturn(peerUrl, token, peer.tokens, AbortSignal.timeout(5_000)).catch(() => undefined);
      return upstream && { serve: (ws) => spliceWebSockets(ws, upstream), cancel: () => upstream.terminate() };
    },
    async close() {
      await leases?.stop();
      await peerServer?.close();
      await gateway?.close();
    },
  };
}
