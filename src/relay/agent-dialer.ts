import type { Duplex } from 'node:stream';
import type { WebSocket } from 'ws';
import type { Db } from '../db/client.ts';
import type { Logger } from '../lib/logger.ts';
import { PassThroughUnsupported, type SshGateway, type TunnelUse } from './gateway/index.ts';
import { Unreachable } from '../ssh/errors.ts';
import type { PeerTokens } from './peer-auth.ts';
import { dialPeer } from './peer-dial.ts';
import type { Returns } from './returns.ts';
import { findTunnelHolder } from './tunnel-holder.ts';

/**
 * A person's SSH connection on its way to the agent, and how it is carried there: the agent's own
 * WebSocket back to the relay (paused until passMessages joins it to the person's), or a channel
 * of its tunnel.
 */
export type PassedThrough = { carried: 'returned'; ws: WebSocket } | { carried: 'tunnelled'; stream: Duplex };

/** How a process opens a stream to an agent's SSH server, wherever its tunnel is. */
export interface AgentDialer {
  /** For the control plane's own connection by default; a person's fails with PassThroughUnsupported on an older agent. */
  dial(computerId: string, signal: AbortSignal, use?: TunnelUse): Promise<Duplex>;
  /**
   * A stream for a person's SSH connection, which the agent's server ends: the agent's own
   * connection back to this replica where it can make one (`returned`), else a channel of its
   * tunnel (`tunnelled`). Fails with PassThroughUnsupported when the agent takes neither.
   */
  dialPerson(computerId: string, signal: AbortSignal): Promise<PassedThrough>;
  /** Drops the agent's tunnel if this process holds it, e.g. when its computer is deleted. */
  disconnect(computerId: string): void;
}

export interface AgentDialerOptions {
  /** The tunnels this process holds; none in a standalone worker. */
  local?: SshGateway;
  /** Tunnels other replicas hold, found in the tunnel table; absent on the embedded database (one process). */
  peers?: { db: Db; tokens: PeerTokens; replicaId?: string };
  /** Where agents' connections back arrive: in a process that serves people's sessions. */
  returns?: Returns;
  log?: Logger;
}

/** How long a person's session waits for the agent to connect back before it takes the tunnel instead. */
const RETURN_TIMEOUT_MS = 5_000;

/** Through this process's own tunnel when it holds one, else through the replica that does. */
export function createAgentDialer(opts: AgentDialerOptions): AgentDialer {
  const dialer: AgentDialer = {
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
    async dialPerson(computerId, signal) {
      const tunnelled = async (): Promise<PassedThrough> => ({ stream: await dialer.dial(computerId, signal, 'person'), carried: 'tunnelled' });
      if (!opts.returns) return tunnelled();
      const expected = opts.returns.expect(computerId, RETURN_TIMEOUT_MS);
      let request: Duplex;
      try {
        request = await dialer.dial(computerId, signal, 'return');
      } catch (err) {
        expected.cancel();
        if (err instanceof PassThroughUnsupported) return tunnelled();
        throw err;
      }
      request.on('error', () => {});
      request.end(`${expected.token}\n`);
      try {
        return { ws: await expected.arrived, carried: 'returned' };
      } catch (err) {
        // It cannot reach the relay's address (a proxy in the way, a wrong public URL): slower, but it works.
        opts.log?.warn({ err, computerId }, "the agent did not connect back for a person's session; its tunnel carries it");
        return tunnelled();
      }
    },
    disconnect(computerId) {
      opts.local?.disconnect(computerId);
    },
  };
  return dialer;
}
