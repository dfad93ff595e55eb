/** What `agentplane ssh` and `port-forward` need of a computer. */
export interface RelayComputer {
  id: string;
  name: string;
  relayClientUrl: string;
}

// Read by hand rather than with zod: loading zod is a tenth of the command's start-up.
const field = (json: unknown, name: string): string | undefined => {
  const value = typeof json === 'object' && json !== null ? (json as Record<string, unknown>)[name] : undefined;
  return typeof value === 'string' ? value : undefined;
};

/** The control plane's address and the caller's credential, from the flags or the environment. */
export interface Credentials {
  url: string;
  apiKey: string;
}

export function credentialsFrom(opts: { url?: string; apiKey?: string }): Credentials {
  const url = opts.url ?? process.env.AGENTPLANE_URL;
  const apiKey = opts.apiKey ?? process.env.AGENTPLANE_API_KEY;
  if (!url) throw new Error("pass --url (or set AGENTPLANE_URL): the control plane's base URL, like https://agentplane.example.com");
  if (!/^https?:\/\//.test(url)) throw new Error(`--url ${JSON.stringify(url)} is not the control plane's base URL, like https://agentplane.example.com`);
  if (!apiKey) throw new Error('pass --api-key (or set AGENTPLANE_API_KEY): your API key');
  return { url: url.replace(/\/+$/, ''), apiKey };
}

/** A computer id (`cmp_...`) rather than a name. */
export const isComputerId = (nameOrId: string): boolean => /^cmp_[A-Za-z0-9]+$/.test(nameOrId);

/**
 * Finds the computer by id (`cmp_...`) or by the caller's own computer name, as the API answers
 * it: only computers the caller may reach are found, so the API's 404 is the message.
 */
export async function findComputer(creds: Credentials, nameOrId: string): Promise<RelayComputer> {
  const byId = isComputerId(nameOrId);
  const path = byId ? `/api/v0/computers/${encodeURIComponent(nameOrId)}` : `/api/v0/computers/name/${encodeURIComponent(nameOrId)}`;
  let res: Response;
  try {
    res = await fetch(`${creds.url}${path}`, { headers: { authorization: `Bearer ${creds.apiKey}`, accept: 'application/json' } });
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    throw new Error(`cannot reach ${creds.url}: ${cause?.code ?? cause?.message ?? (err as Error).message}`);
  }
  const text = await res.text();
  const json = parseJson(text);
  if (!res.ok) {
    throw new Error(`computer ${JSON.stringify(nameOrId)}: ${res.status} ${field(json, 'detail') ?? field(json, 'title') ?? text.slice(0, 200)}`);
  }
  const [id, name, relayClientUrl] = [field(json, 'id'), field(json, 'name'), field(json, 'relayClientUrl')];
  if (id === undefined || name === undefined) throw new Error(`${creds.url}${path} did not answer a computer; is ${creds.url} an agentplane control plane?`);
  if (!relayClientUrl) throw new Error(`computer "${name}" has no relayClientUrl: this control plane offers no relay`);
  return { id, name, relayClientUrl };
}

export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
