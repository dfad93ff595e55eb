import { randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { SecretBox } from '../../lib/secret-box.ts';

/** The secrets provider of stacks whose data key the keeper wraps. */
export const KEEPER_SECRETS_PROVIDER = 'hashivault://agentplane-stacks';

export interface StackKeeper {
  /** What the Pulumi CLI needs to reach the keeper (the variables Pulumi's Vault client reads first). */
  env: Record<string, string>;
  close(): Promise<void>;
}

/**
 * Wraps and unwraps stacks' data keys for the Pulumi CLI, speaking the two calls of HashiCorp
 * Vault's transit engine that Pulumi's `hashivault://` secrets provider makes, on loopback with a
 * token of this process. Each stack's secrets stay encrypted with its own data key, and that key
 * is stored wrapped by `box`; unlike the passphrase provider, no CLI run pays a PBKDF2 derivation
 * (a third of a second of CPU) to open it.
 */
export async function startStackKeeper(box: Pick<SecretBox, 'seal' | 'open'>): Promise<StackKeeper> {
  const token = randomBytes(32).toString('base64url');
  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => reply(res, 400, { errors: [err instanceof Error ? err.message : String(err)] }));
  });

  async function handle(req: IncomingMessage, res: ServerResponse) {
    const given = Buffer.from(String(req.headers['x-vault-token'] ?? ''));
    if (given.length !== token.length || !timingSafeEqual(given, Buffer.from(token))) return reply(res, 403, { errors: ['permission denied'] });
    const op = /^\/v1\/transit\/(encrypt|decrypt)\/[^/]+$/.exec(req.url ?? '')?.[1];
    if (!op || (req.method !== 'PUT' && req.method !== 'POST')) return reply(res, 404, { errors: ['no such transit operation'] });
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { plaintext?: string; ciphertext?: string };
    // Plaintexts travel base64-encoded, as Vault's do; the keeper never needs to decode them.
    if (op === 'encrypt') return reply(res, 200, { data: { ciphertext: box.seal(String(body.plaintext)) } });
    return reply(res, 200, { data: { plaintext: box.open(String(body.ciphertext)) } });
  }

  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve));
  // Serving the CLI runs this process starts must not keep the process alive.
  server.unref();
  const { port } = server.address() as AddressInfo;
  return {
    env: { VAULT_SERVER_URL: `http://127.0.0.1:${port}`, VAULT_SERVER_TOKEN: token },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

function reply(res: ServerResponse, status: number, body: unknown) {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}
