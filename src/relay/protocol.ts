/** What the relay's two ends agree on: where its WebSockets are, and how it ends a session. */

/** The path agents upgrade to a WebSocket on, at the API's own address. */
export const AGENT_RELAY_PATH = '/api/v0/relay/agent';

/** The path people's `agentplane ssh` and `port-forward` upgrade on, per computer. */
export const CLIENT_RELAY_PATTERN = /^\/api\/v0\/computers\/([^/?]+)\/relay$/;

export function clientRelayPath(computerId: string): string {
  return `/api/v0/computers/${encodeURIComponent(computerId)}/relay`;
}

/** WebSocket close code when the relay ends a person's session itself; the reason says why. */
export const RELAY_ENDED_CODE = 4000;

/** Software version in the banner people's SSH clients see. */
export const RELAY_SOFTWARE = 'AgentplaneRelay_1';
