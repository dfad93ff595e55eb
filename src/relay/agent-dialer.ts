import type { Duplex } from 'node:stream';
import type { Db } from '../db/client.ts';
import type { SshGateway, TunnelUse } from './gateway/index.ts';
import { Unreachable } from '../ssh/errors.ts';
import type { PeerTokens } from './peer-auth.ts';
import { dialPeer } from './peer-dial.ts';
import { findTunnelHolder } from './tunnel-holder.ts';

/** How a process opens a stream to an agent's SSH server, wherever its tunnel is. */
export interface AgentDialer {
  /** For the control plane's own connection by default; a person's fails with PassThroughUnsupported on an older agent. */
  dial(computerId: string, signal: AbortSignal, use?: TunnelUse): Promise<Duplex>;
  /** Drops the agent's tunnel if this process holds it, e.g. when its computer is deleted. */
  disconnect(computerId: string): void;
}

export interface AgentDialerOptions {
  /** The tunnels this process holds; none in a standalone worker. */
  local?: SshGateway;
  /** Tunnels other replicas hold, found in the tunnel table; absent on the embedded database (one process). */
  peers?: { db: Db; tokens: PeerTokens; replicaId?: string };
}

/** Through this process's own tunnel when it holds one, else through the replica that does. */
export function createAgentDialer(opts: AgentDialerOptions): AgentDialer {
  return {
    async dial(computerId, signal, use = 'control-plane') {
      if (opts.local?.isConnected(computerId)) return opts.local.dial(computerId, signal, use);
      const holder = opts.peers ? await findTunnelHolder(opts.peers.db, computerId) : undefined;
      if (opts.peers && holder && holder.replicaId !== opts.peers.replicaId) return dialPeer(holder.peerUrl, computerId, opts.peers.tokens, signal, use);
      throw new Unreachable({
        host: computerId,
        port: 22,
        reason: 'the machine\'s agent is not connected to the control plane; is "agentplane agent" running on it?',
      });
    },
    disconnect(computerId) {
      opts.local?.disconnect(computerId);
    },
  };
}
