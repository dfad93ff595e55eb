import type { Db } from '../db/client.ts';
import { newId } from '../lib/ids.ts';
import { generateApiKey } from './api-keys.ts';

export interface IssueApiKeyInput {
  organizationId: string;
  owner: { userId: string } | { serviceAccountId: string };
  name: string;
  expiresAt?: Date | null;
  now: Date;
}

/** Stores a new key (its hash only) and returns the row with the one-time `value`. */
export async function issueApiKey(db: Db, input: IssueApiKeyInput) {
  const key = generateApiKey();
  const row = await db.apiKey.create({
    data: {
      id: newId('key'),
      organizationId: input.organizationId,
      ...input.owner,
      name: input.name,
      secretHash: key.secretHash,
      fingerprint: key.fingerprint,
      expiresAt: input.expiresAt ?? null,
      createdAt: input.now,
    },
  });
  return { ...row, value: key.value };
}
