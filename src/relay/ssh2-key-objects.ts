import { createSecretKey } from 'node:crypto';
import { createRequire } from 'node:module';

/** The parts of ssh2's (pinned 1.17.0) crypto module this uses. */
interface Ssh2Crypto {
  bindingAvailable: boolean;
  CIPHER_INFO: Record<string, { keyLen: number; ivLen: number }>;
  MAC_INFO: Record<string, { len: number }>;
  createCipher(config: object): object;
  createDecipher(config: object): object;
}

/** Where ssh2's Node-crypto ciphers keep the raw keys they pass to createCipheriv/createHmac per packet. */
const KEY_FIELDS = ['_encKey', '_encKeyMain', '_encKeyPktLen', '_decipherKey', '_decKeyMain', '_decKeyPktLen', '_macKey'];

let applied = false;

/**
 * ssh2's native crypto binding is compiled by `npm install` for the Node that ran it (often a
 * system Node 20) and so never loads under the project's own Node 24; ssh2 then encrypts with
 * Node's crypto and creates a cipher (AES-GCM, chacha20) or an HMAC for every packet from the raw
 * key bytes, which Node turns into a key object each time: about 20-60 us a packet, most of the
 * relay's CPU on bulk data (every byte through the relay crosses five such ciphers). This gives each
 * connection's ciphers key objects made once (8 us a packet). Only where the binding is missing;
 * idempotent. Called by the modules that open SSH connections over the relay.
 */
export function useSsh2KeyObjects(): void {
  if (applied) return;
  applied = true;
  const crypto = createRequire(import.meta.url)('ssh2/lib/protocol/crypto.js') as Ssh2Crypto;
  if (crypto.bindingAvailable) return;
  const mac = { macInfo: crypto.MAC_INFO['hmac-sha2-256'], macKey: Buffer.alloc(32) };
  const prototypes = new Set<Record<string, unknown>>();
  for (const name of ['aes128-gcm@openssh.com', 'chacha20-poly1305@openssh.com', 'aes128-ctr']) {
    const info = crypto.CIPHER_INFO[name];
    if (!info) continue;
    const key = Buffer.alloc(info.keyLen);
    const iv = Buffer.alloc(info.ivLen);
    try {
      const cipher = crypto.createCipher({
        outbound: { seqno: 0, onWrite: () => {}, cipherInfo: info, cipherKey: key, cipherIV: iv, forceNative: true, ...mac },
      });
      const decipher = crypto.createDecipher({
        inbound: { seqno: 0, onPayload: () => {}, decipherInfo: info, decipherKey: key, decipherIV: iv, forceNative: true, ...mac },
      });
      prototypes.add(Object.getPrototypeOf(cipher)).add(Object.getPrototypeOf(decipher));
    } catch {
      // A cipher this OpenSSL lacks: ssh2 will not offer it either.
    }
  }
  for (const proto of prototypes) {
    for (const method of ['encrypt', 'decrypt']) {
      const original = proto[method];
      if (typeof original !== 'function') continue;
      proto[method] = function (this: Record<string, unknown>, ...args: unknown[]) {
        for (const field of KEY_FIELDS) {
          const value = this[field];
          if (Buffer.isBuffer(value) && value.length > 0) this[field] = createSecretKey(value);
        }
        return original.apply(this, args);
      };
    }
  }
}
