import type { Db } from '../../db/client.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import type { SecretBox } from '../../lib/secret-box.ts';
import { generateKeyPair } from '../../ssh/index.ts';

export interface OrgSshKey {
  publicKey: string;
  privateKey: string;
}

/**
 * The organization's control-plane SSH key, created on first use. Concurrent first uses race on
 * the primary key; the loser reads the winner's key, so an organization only ever has one.
 */
export async function organizationSshKey(db: Db, secrets: SecretBox, organizationId: string): Promise<OrgSshKey> {
  const stored = await db.organizationSshKey.findUnique({ where: { organizationId } });
  if (stored) return { publicKey: stored.publicKey, privateKey: secrets.open(stored.privateKeyCiphertext) };
  const pair = generateKeyPair(`agentplane-${organizationId}`);
  try {
    await db.organizationSshKey.create({
      data: { organizationId, publicKey: pair.publicKey, privateKeyCiphertext: secrets.seal(pair.privateKey) },
    });
    return { publicKey: pair.publicKey, privateKey: pair.privateKey };
  } catch (err) {
    if (!isUniqueViolation(err)) throw err;
    return organizationSshKey(db, secrets, organizationId);
  }
}
