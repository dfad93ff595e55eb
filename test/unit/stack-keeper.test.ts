import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { createSecretBox } from '../../src/lib/secret-box.ts';
import { startStackKeeper, type StackKeeper } from '../../src/provisioning/pulumi/stack-keeper.ts';

/** One transit call as Pulumi's Vault client makes it. */
async function transit(keeper: StackKeeper, op: 'encrypt' | 'decrypt', body: unknown, token = keeper.env.VAULT_SERVER_TOKEN!) {
  const res = await fetch(`${keeper.env.VAULT_SERVER_URL}/v1/transit/${op}/agentplane-stacks`, {
    method: 'PUT',
    headers: { 'x-vault-token': token },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as { data?: Record<string, string>; errors?: string[] } };
}

describe('stack keeper (the Vault transit calls of Pulumi’s hashivault:// provider)', () => {
  const keepers: StackKeeper[] = [];
  const start = async () => {
    const keeper = await startStackKeeper(createSecretBox(randomBytes(32)));
    keepers.push(keeper);
    return keeper;
  };
  afterEach(async () => {
    await Promise.all(keepers.splice(0).map((k) => k.close()));
  });

  it('wraps and unwraps a data key for the holder of its token only', async () => {
    const keeper = await start();
    expect(keeper.env.VAULT_SERVER_URL).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const plaintext = randomBytes(32).toString('base64');

    const sealed = await transit(keeper, 'encrypt', { plaintext });
    expect(sealed.status).toBe(200);
    const ciphertext = sealed.body.data!.ciphertext!;
    expect(ciphertext).not.toContain(plaintext);

    expect(await transit(keeper, 'decrypt', { ciphertext })).toEqual({ status: 200, body: { data: { plaintext } } });
    expect((await transit(keeper, 'decrypt', { ciphertext }, 'not-the-token')).status).toBe(403);
    expect((await transit(keeper, 'decrypt', { ciphertext }, '')).status).toBe(403);
  });

  it('refuses a data key wrapped under another key', async () => {
    const [one, other] = [await start(), await start()];
    const ciphertext = (await transit(one, 'encrypt', { plaintext: 'AAAA' })).body.data!.ciphertext;
    const res = await transit(other, 'decrypt', { ciphertext });
    expect(res.status).toBe(400);
    expect(res.body.errors![0]).toMatch(/AGENTPLANE_ENCRYPTION_KEY differs/);
  });
});
