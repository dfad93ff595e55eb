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
 * Software version in the banner of the agent's in-process SSH server. The server kills a
 * command's process group on an SSH `signal` request and when the channel closes, so clients may
 * use signal requests to stop commands (see serverHonoursSignals in ../../ssh/command.ts).
 */
export const AGENT_SERVER_SOFTWARE = 'AgentplaneAgent_1';

/** Software version in the gateway's banner. */
export const GATEWAY_SOFTWARE = 'AgentplaneGateway_1';
