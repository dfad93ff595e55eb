import { z } from 'zod';

export interface RegistrationRequest {
  /** The control plane's base URL, e.g. `https://agentplane.example.com`. */
  url: string;
  /** An API key registers a new byom computer; a dial-in machine's token registers the computer it was issued for. */
  credential: { apiKey: string } | { registrationToken: string };
  name: string;
  remoteUser: string;
  hostId: string;
  /** OpenSSH public key lines of the agent's client key and of its SSH server's host key. */
  agentPublicKey: string;
  hostPublicKey: string;
  signal?: AbortSignal;
}

export interface RegisteredComputer {
  id: string;
  /** Where the agent keeps its tunnel: `wss://.../api/v0/relay/agent` or `ssh://host:port`; null when the control plane offers none. */
  relayAgentUrl: string | null;
}

/** The control plane said no (4xx): retrying the same request will not help. */
export class RegistrationRefused extends Error {
  readonly status: number;

  constructor(status: number, message: string) {
    super(message);
    this.name = 'RegistrationRefused';
    this.status = status;
  }
}

/** The control plane could not be reached or failed (network error, 5xx): worth retrying. */
export class RegistrationUnavailable extends Error {
  constructor(message: string, opts?: { cause?: unknown }) {
    super(message, opts);
    this.name = 'RegistrationUnavailable';
  }
}

const ComputerSchema = z.object({ id: z.string().min(1), relayAgentUrl: z.string().nullish() });
const ErrorSchema = z.object({ detail: z.string().optional(), title: z.string().optional() });

function computersUrl(baseUrl: string): string {
  return `${baseUrl.replace(/\/+$/, '')}/api/v0/computers`;
}

/**
 * `POST /api/v0/computers` for a byom machine reached through its agent, or, with a registration
 * token, `POST /api/v0/computers/register` for the computer a program made.
 */
export async function registerComputer(req: RegistrationRequest): Promise<RegisteredComputer> {
  const connection = { type: 'agent', agentPublicKey: req.agentPublicKey, hostPublicKey: req.hostPublicKey };
  const common = { name: req.name, remoteUser: req.remoteUser, hostId: req.hostId, connection };
  const [url, headers, body] =
    'apiKey' in req.credential
      ? [computersUrl(req.url), { authorization: `Bearer ${req.credential.apiKey}` }, { ...common, provider: 'byom' }]
      : [`${computersUrl(req.url)}/register`, {}, { ...common, registrationToken: req.credential.registrationToken }];
  let res: Response;
  try {
    res = await fetch(url, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify(body),
      signal: req.signal,
    });
  } catch (err) {
    if (req.signal?.aborted) throw err;
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    throw new RegistrationUnavailable(`cannot reach ${url}: ${cause?.code ?? cause?.message ?? (err as Error).message}`, { cause: err });
  }
  const text = await res.text();
  const json = parseJson(text);
  if (!res.ok) {
    const body = ErrorSchema.safeParse(json);
    const detail = (body.success && (body.data.detail ?? body.data.title)) || text.slice(0, 200) || res.statusText;
    const message = `registering "${req.name}" at ${req.url} failed (${res.status}): ${detail}`;
    if (res.status >= 400 && res.status < 500) throw new RegistrationRefused(res.status, message);
    throw new RegistrationUnavailable(message);
  }
  const computer = ComputerSchema.safeParse(json);
  if (!computer.success)
    throw new RegistrationRefused(res.status, `${url} answered ${res.status} without a computer in the body; is ${req.url} an agentplane control plane?`);
  return { id: computer.data.id, relayAgentUrl: computer.data.relayAgentUrl ?? null };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
