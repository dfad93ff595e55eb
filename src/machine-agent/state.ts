import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { generateKeyPair, publicKeyOf, type SshKeyPair } from '../provisioning/ssh/keys.ts';

/** What the agent remembers between runs, in `state.json` of its state directory. */
const AgentStateSchema = z.object({
  /** Set once the machine is registered; a restart then skips registration. */
  computerId: z.string().min(1).optional(),
  name: z.string().optional(),
  url: z.string().optional(),
  relayAgentUrl: z.string().optional(),
  /** Gateway host key, pinned on first connection (or by --gateway-host-key). */
  gatewayHostKey: z.string().optional(),
  /** Random host id, only for machines without /etc/machine-id. */
  fallbackHostId: z.string().optional(),
});
type AgentState = z.infer<typeof AgentStateSchema>;

interface AgentKeys {
  /** Authenticates the agent to the gateway: its per-computer credential. */
  client: SshKeyPair;
  /** The host key of the agent's own SSH server, which the control plane pins at registration. */
  host: SshKeyPair;
}

export interface AgentStateDir {
  readonly dir: string;
  readonly keys: AgentKeys;
  read(): Promise<AgentState>;
  /** Merges `patch` into state.json, atomically. */
  update(patch: Partial<AgentState>): Promise<AgentState>;
}

/** `~/.config/agentplane/agent/<name>/`. */
export function defaultStateDir(name: string): string {
  return path.join(os.homedir(), '.config', 'agentplane', 'agent', name);
}

const STATE_FILE = 'state.json';

/**
 * Opens (creating if needed) the agent's state directory, mode 0700, with its two ed25519 key
 * pairs in `client_key` and `host_key` (0600). The keys never leave the machine; only their
 * public halves are registered.
 */
export async function openStateDir(dir: string): Promise<AgentStateDir> {
  await fs.mkdir(dir, { recursive: true, mode: 0o700 });
  // mkdir leaves an existing directory's mode alone; private keys live here.
  await fs.chmod(dir, 0o700);
  const keys = { client: await loadOrCreateKey(dir, 'client_key', 'agentplane-agent'), host: await loadOrCreateKey(dir, 'host_key', 'agentplane-agent-host') };
  const file = path.join(dir, STATE_FILE);

  const read = async (): Promise<AgentState> => {
    let text: string;
    try {
      text = await fs.readFile(file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return {};
      throw err;
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new Error(`${file} is not valid JSON; remove it to register this machine again`);
    }
    const parsed = AgentStateSchema.safeParse(json);
    if (!parsed.success) throw new Error(`${file} is not an agent state file (${parsed.error.issues[0]?.message}); remove it to register again`);
    return parsed.data;
  };

  return {
    dir,
    keys,
    read,
    async update(patch) {
      const next = { ...(await read()), ...patch };
      await writePrivateFile(file, `${JSON.stringify(next, null, 2)}\n`);
      return next;
    },
  };
}

async function loadOrCreateKey(dir: string, fileName: string, comment: string): Promise<SshKeyPair> {
  const file = path.join(dir, fileName);
  try {
    const privateKey = await fs.readFile(file, 'utf8');
    return { privateKey, ...publicKeyOf(privateKey, comment) };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw new Error(`cannot read ${file}: ${(err as Error).message}`, { cause: err });
  }
  const pair = generateKeyPair(comment);
  await writePrivateFile(file, pair.privateKey);
  return pair;
}

/** Writes through a temp file and a rename, so a crash never leaves half a file; mode 0600. */
async function writePrivateFile(file: string, content: string): Promise<void> {
  const tmp = `${file}.${process.pid}.tmp`;
  await fs.writeFile(tmp, content, { mode: 0o600 });
  await fs.rename(tmp, file);
}
