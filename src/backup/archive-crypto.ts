import { createCipheriv, createDecipheriv, createHmac, randomBytes, scrypt, timingSafeEqual } from 'node:crypto';

/**
 * The encrypted envelope of a backup archive. A header (magic, scrypt parameters, salt, and a
 * passphrase check) is followed by frames of at most FRAME_BYTES of plaintext, each sealed with
 * AES-256-GCM under a key scrypt derives from the passphrase. Every frame authenticates the
 * header, its own position and whether it is the last one, so a wrong passphrase, a changed,
 * reordered or missing frame, and an archive cut short anywhere are each told apart.
 */

const MAGIC = Buffer.from('APBACKUP');
const VERSION = 1;
const FRAME_BYTES = 1 << 20;
const TAG_BYTES = 16;
// scrypt N=2^15, r=8, p=1 (32 MiB, about 0.1 s): OWASP's minimum for a stored passphrase.
const SCRYPT = { logN: 15, r: 8, p: 1 };
const HEADER_BYTES = MAGIC.length + 4 + 16 + 32;
const FINAL = 1;

/** The archive cannot be read: not one, a wrong passphrase, damaged or cut short. */
export class ArchiveUnreadable extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ArchiveUnreadable';
  }
}

interface Keys {
  data: Buffer;
  check: Buffer;
}

async function deriveKeys(passphrase: string, salt: Buffer, p: typeof SCRYPT): Promise<Keys> {
  const bytes = await new Promise<Buffer>((resolve, reject) =>
    scrypt(passphrase, salt, 64, { N: 2 ** p.logN, r: p.r, p: p.p, maxmem: 256 * 2 ** p.logN * p.r }, (err, key) => (err ? reject(err) : resolve(key))),
  );
  const check = createHmac('sha256', bytes.subarray(32)).update('agentplane backup passphrase check').digest();
  return { data: bytes.subarray(0, 32), check };
}

function nonce(index: number): Buffer {
  const iv = Buffer.alloc(12);
  iv.writeBigUInt64BE(BigInt(index), 4);
  return iv;
}

function aad(header: Buffer, index: number, flags: number): Buffer {
  const tail = Buffer.alloc(9);
  tail.writeBigUInt64BE(BigInt(index));
  tail[8] = flags;
  return Buffer.concat([header, tail]);
}

/** Encrypts a byte stream into the archive format. */
export async function* encryptArchive(plain: AsyncIterable<Buffer>, passphrase: string): AsyncGenerator<Buffer> {
  const salt = randomBytes(16);
  const keys = await deriveKeys(passphrase, salt, SCRYPT);
  const header = Buffer.concat([MAGIC, Buffer.from([VERSION, SCRYPT.logN, SCRYPT.r, SCRYPT.p]), salt, keys.check]);
  yield header;
  let index = 0;
  const seal = (data: Buffer, flags: number): Buffer => {
    const cipher = createCipheriv('aes-256-gcm', keys.data, nonce(index));
    cipher.setAAD(aad(header, index++, flags));
    const prefix = Buffer.alloc(5);
    prefix.writeUInt32BE(data.length);
    prefix[4] = flags;
    return Buffer.concat([prefix, cipher.update(data), cipher.final(), cipher.getAuthTag()]);
  };
  let pending: Buffer[] = [];
  let size = 0;
  for await (const chunk of plain) {
    pending.push(chunk);
    size += chunk.length;
    while (size >= FRAME_BYTES) {
      const all = Buffer.concat(pending);
      yield seal(all.subarray(0, FRAME_BYTES), 0);
      pending = [all.subarray(FRAME_BYTES)];
      size = pending[0]!.length;
    }
  }
  yield seal(Buffer.concat(pending), FINAL);
}

/** Reads exactly n bytes at a time from a stream of chunks; undefined at a clean end. */
export class ByteReader {
  private buffered: Buffer[] = [];
  private size = 0;
  private readonly it: AsyncIterator<Buffer>;

  constructor(source: AsyncIterable<Buffer>) {
    this.it = source[Symbol.asyncIterator]();
  }

  /** n bytes, or fewer only when the stream ends first (an empty buffer at its end). */
  async read(n: number): Promise<Buffer> {
    while (this.size < n) {
      const next = await this.it.next();
      if (next.done) break;
      this.buffered.push(next.value);
      this.size += next.value.length;
    }
    const all = this.buffered.length === 1 ? this.buffered[0]! : Buffer.concat(this.buffered);
    const out = all.subarray(0, n);
    this.buffered = [all.subarray(out.length)];
    this.size = all.length - out.length;
    return out;
  }
}

/** Decrypts an archive; throws ArchiveUnreadable on a wrong passphrase, damage or truncation. */
export async function* decryptArchive(archive: AsyncIterable<Buffer>, passphrase: string): AsyncGenerator<Buffer> {
  const reader = new ByteReader(archive);
  const header = await reader.read(HEADER_BYTES);
  if (header.length < HEADER_BYTES || !header.subarray(0, MAGIC.length).equals(MAGIC)) throw new ArchiveUnreadable('not an agentplane backup archive');
  const [version, logN, r, p] = header.subarray(MAGIC.length, MAGIC.length + 4);
  if (version !== VERSION) throw new ArchiveUnreadable(`archive format version ${version} is not one this agentplane reads`);
  if (logN! > 20 || r! > 16 || p! > 4) throw new ArchiveUnreadable('the archive asks for key derivation parameters out of bounds');
  const keys = await deriveKeys(passphrase, header.subarray(MAGIC.length + 4, MAGIC.length + 20), { logN: logN!, r: r!, p: p! });
  if (!timingSafeEqual(keys.check, header.subarray(MAGIC.length + 20))) {
    throw new ArchiveUnreadable('wrong passphrase: AGENTPLANE_BACKUP_PASSPHRASE is not the one this archive was made with');
  }
  for (let index = 0; ; index++) {
    const prefix = await reader.read(5);
    if (prefix.length < 5) throw new ArchiveUnreadable('the archive is truncated: it ends before its last part');
    const length = prefix.readUInt32BE(0);
    const flags = prefix[4]!;
    if (length > FRAME_BYTES || (flags & ~FINAL) !== 0) throw new ArchiveUnreadable(`the archive is damaged (part ${index})`);
    const body = await reader.read(length + TAG_BYTES);
    if (body.length < length + TAG_BYTES) throw new ArchiveUnreadable('the archive is truncated: it ends before its last part');
    const decipher = createDecipheriv('aes-256-gcm', keys.data, nonce(index));
    decipher.setAAD(aad(header, index, flags));
    decipher.setAuthTag(body.subarray(length));
    let plain: Buffer;
    try {
      plain = Buffer.concat([decipher.update(body.subarray(0, length)), decipher.final()]);
    } catch {
      throw new ArchiveUnreadable(`the archive is damaged (part ${index} fails authentication)`);
    }
    yield plain;
    if (flags & FINAL) {
      if ((await reader.read(1)).length > 0) throw new ArchiveUnreadable('the archive is damaged: data follows its last part');
      return;
    }
  }
}
