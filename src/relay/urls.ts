import { AGENT_RELAY_PATH, clientRelayPath } from './protocol.ts';

/** The relay's public addresses, as computers report them in relayAgentUrl and relayClientUrl. */
export interface RelayUrls {
  agentUrl(): string | undefined;
  clientUrl(computerId: string): string | undefined;
}

/**
 * Relay URLs under a base URL (`AGENTPLANE_PUBLIC_URL`, or the server's own address once it
 * listens, hence a function): `https:` becomes `wss:`, `http:` `ws:`, and a path prefix the API is
 * served under is kept.
 */
export function relayUrls(base: () => string | undefined): RelayUrls {
  const under = (path: string): string | undefined => {
    const b = base();
    if (!b) return undefined;
    const url = new URL(b);
    url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
    url.pathname = `${url.pathname.replace(/\/+$/, '')}${path}`;
    url.search = '';
    url.hash = '';
    return url.href;
  };
  return { agentUrl: () => under(AGENT_RELAY_PATH), clientUrl: (id) => under(clientRelayPath(id)) };
}

/** The API's public base URL, read off the relay's (AGENTPLANE_PUBLIC_URL, or where this server listens). */
export function publicBaseUrl(urls: RelayUrls | undefined): string | undefined {
  const agent = urls?.agentUrl();
  if (!agent) return undefined;
  const url = new URL(agent);
  url.protocol = url.protocol === 'wss:' ? 'https:' : 'http:';
  url.pathname = url.pathname.slice(0, -AGENT_RELAY_PATH.length);
  return url.href.replace(/\/+$/, '');
}
