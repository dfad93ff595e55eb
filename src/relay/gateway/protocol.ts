/**
 * What the SSH gateway and `agentplane agent` agree on. The agent dials out to the gateway and
 * asks for remote forwarding of one symbolic address; each `forwarded-tcpip` channel the gateway
 * opens for that address carries one SSH connection of the control plane to the agent's own
 * in-process SSH server (a reverse tunnel).
 */

/** The bind address and port of the agent's `tcpip-forward` request; only a name, nothing listens on it. */
export const FORWARD_BIND_ADDRESS = 'agentplane';
export const FORWARD_BIND_PORT = 22;

/**
 * A forwarding an agent asks for before the control plane's (an older gateway keeps only the last
 * one asked for): people's own SSH connections (`agentplane ssh`, OpenSSH through `--stdio`),
 * passed through whole. The agent's server ends them itself, so the relay carries their
 * ciphertext and decrypts none of it. For an agent that did not ask (an older one) the relay
 * bridges people's channels to a connection of its own instead.
 */
export const PEOPLE_BIND_ADDRESS = 'agentplane-people';

/**
 * Another, asked for by an agent whose relay is a WebSocket: a channel opened to it
 * carries one line, a token, and the agent answers it by opening a WebSocket of its own back to
 * the relay (AGENT_RETURN_PATH) for one person's SSH connection. The person's bytes then cross the
 * replica as WebSocket messages only, without the tunnel's SSH layer at either end.
 */
export const RETURN_BIND_ADDRESS = 'agentplane-return';

/** Whose SSH connection the agent's server ends: the control plane's, or a person's. */
export type SessionUse = 'control-plane' | 'person';

/** What a channel of the tunnel is for: an SSH connection to the agent's server, or a request to connect back. */
export type TunnelUse = SessionUse | 'return';

/**
 * Software version in the banner of the agent's in-process SSH server. The server kills a
 * command's process group on an SSH `signal` request and when the channel closes, so clients may
 * use signal requests to stop commands (see serverHonoursSignals in ../../ssh/command.ts).
 */
export const AGENT_SERVER_SOFTWARE = 'AgentplaneAgent_1';

/** Software version in the gateway's banner. */
export const GATEWAY_SOFTWARE = 'AgentplaneGateway_1';
