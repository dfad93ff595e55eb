import { createCipheriv, randomBytes } from 'node:crypto';
import type { SecretBox } from '../../lib/secret-box.ts';
import { KEEPER_SECRETS_PROVIDER } from './stack-keeper.ts';

/**
 * A stack's secret configuration value, encrypted in this process as `pulumi config set --secret`
 * would: Pulumi's symmetric crypter (AES-256-GCM, a 12-byte nonce, `v1:<nonce>:<sealed>` in
 * standard base64) with the stack's own data key. The data key is the keeper's: the settings file
 * holds it wrapped by `keys` (`encryptedkey`, base64 of what the keeper's encrypt answered, whose
 * plaintext is the key in base64, as Vault's transit engine takes it). Undefined when the settings
 * are not a keeper stack's with its key (a passphrase stack, or settings a replica has not written
 * yet): the caller sets the value through the CLI then.
 */
export function encryptSecretConfig(
  settings: { secretsprovider?: unknown; encryptedkey?: unknown },
  keys: Pick<SecretBox, 'open'>,
  value: string,
): string | undefined {
  if (settings.secretsprovider !== KEEPER_SECRETS_PROVIDER || typeof settings.encryptedkey !== 'string') return undefined;
  const dataKey = Buffer.from(keys.open(Buffer.from(settings.encryptedkey, 'base64').toString('utf8')), 'base64');
  if (dataKey.length !== 32) return undefined;
  const nonce = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', dataKey, nonce);
  const sealed = Buffer.concat([cipher.update(value, 'utf8'), cipher.final(), cipher.getAuthTag()]);
  return `v1:${nonce.toString('base64')}:${sealed.toString('base64')}`;
}
