import { BadRequest } from '../../lib/errors.ts';
import type { SecretBox } from '../../lib/secret-box.ts';

/**
 * The API keys of an organization's `customModels` (enterprise controls). The stored document
 * keeps each key sealed in `apiKeyCiphertext` and, in `apiKey`, the mask every answer, revision
 * snapshot and audit record shows instead of the key. Documents written before keys were sealed
 * hold the key itself in `apiKey`: it is masked whenever it is read and sealed on the next PUT.
 */

type Settings = Record<string, unknown>;
type Entry = Record<string, unknown>;
type Keys = Pick<SecretBox, 'seal' | 'open'>;

const MASK = '••••';
const CIPHERTEXT = 'apiKeyCiphertext';

/** `••••` and the key's last four characters; a short key shows nothing of itself. */
function maskApiKey(key: string): string {
  return key.length >= 12 ? `${MASK}${key.slice(-4)}` : MASK;
}

const isEntry = (value: unknown): value is Entry => !!value && typeof value === 'object' && !Array.isArray(value);
const isMask = (value: unknown): value is string => typeof value === 'string' && value.startsWith(MASK);

function mapEntries(settings: Settings, fn: (entry: Entry, index: number) => Entry): Settings {
  const list = settings.customModels;
  if (!Array.isArray(list)) return settings;
  const mapped = list.map((m, i) => (isEntry(m) ? fn(m, i) : m));
  // The same document when no entry changed, so callers can tell by identity.
  return mapped.every((m, i) => m === list[i]) ? settings : { ...settings, customModels: mapped };
}

/** The document as answers, history and audit show it: no ciphertext, every key masked. */
export function redactCustomModelKeys(settings: Settings): Settings {
  return mapEntries(settings, (entry) => {
    const { [CIPHERTEXT]: _sealed, ...shown } = entry;
    if (typeof shown.apiKey === 'string' && !isMask(shown.apiKey)) shown.apiKey = maskApiKey(shown.apiKey);
    return shown;
  });
}

/** The document a turn reads: each custom model's key opened (or, written before sealing, as stored). */
export function openCustomModelKeys(settings: unknown, keys: Pick<SecretBox, 'open'>): unknown {
  if (!isEntry(settings)) return settings;
  return mapEntries(settings, (entry) => (typeof entry[CIPHERTEXT] === 'string' ? { ...entry, apiKey: keys.open(entry[CIPHERTEXT]) } : entry));
}

/** The stored document with keys written before sealing sealed; the very same object when there were none. */
export function sealLegacyCustomModelKeys(settings: Settings, keys: Keys): Settings {
  return mapEntries(settings, (entry) =>
    typeof entry.apiKey === 'string' && typeof entry[CIPHERTEXT] !== 'string' ? sealed(entry, entry.apiKey, keys) : entry,
  );
}

function sealed(entry: Entry, key: string, keys: Keys): Entry {
  return { ...entry, apiKey: maskApiKey(key), [CIPHERTEXT]: keys.seal(key) };
}

/**
 * The document to store for a PUT, given the stored one (already sealed). Per entry of
 * `customModels`, matched to the stored entry by `id`: `apiKey` omitted or equal to the stored
 * key's mask keeps the stored key; a new key replaces it; `null` removes it. An unchanged key
 * keeps its ciphertext, so sending the current document again compares equal.
 */
export function sealCustomModelKeys(incoming: Settings, stored: Settings, keys: Keys): Settings {
  const storedList = Array.isArray(stored.customModels) ? stored.customModels.filter(isEntry) : [];
  return mapEntries(incoming, (entry, i) => {
    const at = `settings.customModels[${i}]`;
    if (CIPHERTEXT in entry) throw new BadRequest(`${at}.${CIPHERTEXT} is written by the server; send the key as apiKey`);
    const { apiKey, ...rest } = entry;
    const previous = typeof entry.id === 'string' ? storedList.find((m) => m.id === entry.id) : undefined;
    const previousKey = previous && typeof previous[CIPHERTEXT] === 'string' ? { apiKey: previous.apiKey, [CIPHERTEXT]: previous[CIPHERTEXT] } : undefined;
    if (apiKey === null) return rest;
    if (apiKey === undefined) return { ...rest, ...previousKey };
    if (typeof apiKey !== 'string' || apiKey === '') {
      throw new BadRequest(`${at}.apiKey must be a non-empty string, null to remove the key, or left out to keep the stored one`);
    }
    if (isMask(apiKey)) {
      if (previousKey?.apiKey === apiKey) return { ...rest, ...previousKey };
      throw new BadRequest(
        `${at}.apiKey ${JSON.stringify(apiKey)} is a masked key, but custom model ${JSON.stringify(entry.id)} has no stored key it masks; ` +
          'send the key itself, leave apiKey out to keep the stored key, or null to remove it',
      );
    }
    if (previousKey && keys.open(previousKey[CIPHERTEXT] as string) === apiKey) return { ...rest, ...previousKey };
    return sealed(rest, apiKey, keys);
  });
}
