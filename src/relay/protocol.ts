/** What the relay's two ends agree on: where its WebSockets are, and how it ends a session. */

/** The path agents upgrade to a WebSocket on, at the API's own address. */
export const AGENT_RELAY_PATH = '/api/v0/relay/agent';

/**
 * The path an agent connects back on, for one person's SSH connection it was asked to end (see
 * RETURN_BIND_ADDRESS): its own relay address plus `/return`, the token in RETURN_TOKEN_HEADER.
 */
export const AGENT_RETURN_PATH = `${AGENT_RELAY_PATH}/return`;
export const RETURN_TOKEN_HEADER = 'x-agentplane-return';

/** Where an agent whose relay is `relayAgentUrl` connects back. */
export function agentReturnUrl(relayAgentUrl: string): string {
  const url = new URL(relayAgentUrl);
  url.pathname = `${url.pathname.replace(/\/+$/, '')}/return`;
  return url.href;
}

/** The path people's `agentplane ssh` and `port-forward` upgrade on, per computer. */
export const CLIENT_RELAY_PATTERN = /^\/api\/v0\/computers\/([^/?]+)\/relay$/;

export function clientRelayPath(computerId: string): string {
  return `/api/v0/computers/${encodeURIComponent(computerId)}/relay`;
}

/** WebSocket close code when the relay ends a person's session itself; the reason says why. */
export const RELAY_ENDED_CODE = 4000;

/** Software version in the banner people's SSH clients see. */
export const RELAY_SOFTWARE = 'AgentplaneRelay_1';
