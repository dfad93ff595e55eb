import os from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { normalizeFingerprint } from '../../ssh/host-keys.ts';
import { agentReturnUrl, RETURN_TOKEN_HEADER } from '../../relay/protocol.ts';
import { localHostId } from './host-id.ts';
import { dialGateway, parseGatewayUrl } from './gateway-address.ts';
import { registerComputer, RegistrationUnavailable, type RegisteredComputer } from './registration.ts';
import { createSessionServer } from './session-server.ts';
import { defaultStateDir, openStateDir, type AgentStateDir } from './state.ts';
import { runTunnel, type TunnelOptions } from './tunnel.ts';

export interface AgentOptions {
  /** The control plane's base URL. */
  url: string;
  /** Needed only to register; a registered agent authenticates with its own key. */
  apiKey?: string;
  /** Instead of an API key: the single-use token a program gave this machine to register its computer. */
  registrationToken?: string;
  name: string;
  /** Default `~/.config/agentplane/agent/<name>/`. */
  stateDir?: string;
  /** Pins the gateway's host key (`SHA256:...`) instead of trusting the first one seen. */
  gatewayHostKey?: string;
  /** `wss://...` or `ssh://host:port` to use instead of the registered relayAgentUrl (e.g. through a proxy). */
  gateway?: string;
  log(line: string): void;
  /** Overrides for tests: reconnect delays, keepalive, where the machine id is read from. */
  tunnel?: Pick<TunnelOptions, 'backoff' | 'keepaliveIntervalMs' | 'keepaliveCountMax' | 'onConnected'>;
  machineIdFiles?: readonly string[];
}

/**
 * What the agent passes on to every command: its own environment minus its credential, with
 * HOME, USER and LOGNAME from the password database as sshd sets them (the agent may have been
 * started by `sudo -u` with someone else's HOME).
 */
function commandEnvironment(): NodeJS.ProcessEnv {
  const user = os.userInfo();
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: user.homedir, USER: user.username, LOGNAME: user.username };
  delete env.AGENTPLANE_API_KEY;
  delete env.AGENTPLANE_REGISTRATION_TOKEN;
  return env;
}

/**
 * Registers this machine (once) and serves the control plane through the relay tunnel until
 * `signal` aborts. Rejects with RegistrationRefused or TunnelRefused when retrying cannot help.
 */
export async function runAgent(opts: AgentOptions, signal: AbortSignal): Promise<void> {
  checkName(opts.name);
  checkUrl(opts.url);
  const state = await openStateDir(opts.stateDir ?? defaultStateDir(opts.name));
  const username = os.userInfo().username;
  let saved = await state.read();

  if (saved.computerId) {
    if (saved.url && saved.url !== opts.url) {
      throw new Error(
        `${state.dir} belongs to computer ${saved.computerId} registered at ${saved.url}, not ${opts.url}; ` +
          'pass another --state-dir (or --name) to register this machine there',
      );
    }
    opts.log(`computer ${saved.computerId} is registered (state in ${state.dir})`);
  } else {
    const computer = await registerUntilDone(opts, state, username, signal);
    if (!computer) return;
    saved = await state.update({ computerId: computer.id, name: opts.name, url: opts.url, relayAgentUrl: computer.relayAgentUrl ?? undefined });
    opts.log(`registered this machine as computer ${computer.id} ("${opts.name}", user ${username})`);
  }
  const computerId = saved.computerId!;

  const gatewayUrl = opts.gateway ?? saved.relayAgentUrl;
  if (!gatewayUrl) {
    throw new Error(
      `the control plane at ${saved.url ?? opts.url} named no relay (relayAgentUrl) for this computer; pass --gateway wss://host/api/v0/relay/agent or ssh://host:port`,
    );
  }
  if (opts.gatewayHostKey) {
    saved = await state.update({ gatewayHostKey: normalizeFingerprint(opts.gatewayHostKey) });
  }

  const sessions = createSessionServer({ hostKey: state.keys.host.privateKey, username, env: commandEnvironment(), log: opts.log });
  const gateway = parseGatewayUrl(gatewayUrl);
  // A person's connection comes back on a WebSocket of its own when the relay is one (see RETURN_BIND_ADDRESS).
  const connectBack = (url: string, token: string) =>
    dialGateway({ kind: 'ws', url: agentReturnUrl(url) }, { timeoutMs: 10_000, signal, headers: { [RETURN_TOKEN_HEADER]: token } }).then(
      (stream) => sessions.serve(stream, 'person'),
      (err: Error) => opts.log(`cannot connect back to the relay for a person's session: ${err.message}`),
    );
  await runTunnel(
    {
      ...opts.tunnel,
      gateway,
      computerId,
      clientKey: state.keys.client.privateKey,
      gatewayHostKey: saved.gatewayHostKey,
      pinGatewayHostKey: async (fingerprint) => {
        await state.update({ gatewayHostKey: fingerprint });
      },
      onStream: (stream, use) => sessions.serve(stream, use),
      onReturn: gateway.kind === 'ws' ? (token) => void connectBack(gateway.url, token) : undefined,
      log: opts.log,
    },
    signal,
  );
}

/** Registers, retrying while the control plane is unreachable or failing; undefined if aborted. */
async function registerUntilDone(opts: AgentOptions, state: AgentStateDir, username: string, signal: AbortSignal): Promise<RegisteredComputer | undefined> {
  const credential = opts.registrationToken ? { registrationToken: opts.registrationToken } : opts.apiKey ? { apiKey: opts.apiKey } : undefined;
  if (!credential) {
    throw new Error('this machine is not registered yet: pass --api-key (or set AGENTPLANE_API_KEY), or --registration-token, to register it');
  }
  const hostId = await localHostId(state, opts.machineIdFiles);
  const { protocol, hostname } = new URL(opts.url);
  if (protocol === 'http:' && !['localhost', '127.0.0.1', '[::1]'].includes(hostname)) {
    opts.log(`warning: ${opts.url} is plain HTTP; the API key crosses the network unencrypted`);
  }
  for (let attempt = 0; !signal.aborted; attempt++) {
    try {
      return await registerComputer({
        url: opts.url,
        credential,
        name: opts.name,
        remoteUser: username,
        hostId,
        agentPublicKey: state.keys.client.publicKey,
        hostPublicKey: state.keys.host.publicKey,
        signal,
      });
    } catch (err) {
      if (signal.aborted) return undefined;
      if (!(err instanceof RegistrationUnavailable)) throw err;
      const delay = Math.min(30_000, 1_000 * 2 ** attempt);
      opts.log(`${err.message}; retrying in ${delay / 1000} s`);
      await sleep(delay, undefined, { signal }).catch(() => {});
    }
  }
  return undefined;
}

/** The name also names the default state directory, so it must be a plain file name. */
function checkName(name: string): void {
  if (name.length < 1 || name.length > 63 || name === '.' || name === '..' || /[/\\\0]/.test(name)) {
    throw new Error(`--name ${JSON.stringify(name)} must be 1-63 characters without slashes`);
  }
}

function checkUrl(url: string): void {
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    parsed = undefined;
  }
  if (!parsed || (parsed.protocol !== 'https:' && parsed.protocol !== 'http:')) {
    throw new Error(`--url ${JSON.stringify(url)} is not the control plane's base URL, like https://agentplane.example.com`);
  }
}
