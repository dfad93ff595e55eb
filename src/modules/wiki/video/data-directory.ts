import { createHmac, timingSafeEqual } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Forbidden, PayloadTooLarge } from '../../../lib/errors.ts';
import type { VideoStorage } from './storage.ts';

export interface SignedUpload {
  key: string;
  contentType: string;
  maxBytes: number;
  expires: number;
}

/**
 * Videos as files under `<data dir>/wiki-videos`, uploaded through agentplane's own signed PUT
 * endpoint (`PUT /api/v0/wiki/{wikiRunId}/video?...`): the signature (HMAC-SHA256 under a key
 * derived from the encryption key) binds the run, content type, size bound and expiry, so the
 * URL is the only credential the upload needs. One node only: replicas need object storage.
 */
export function dataDirectoryVideoStorage(opts: { dir: string; signingKey: string; baseUrl: () => string | undefined }) {
  const sign = (u: SignedUpload) => createHmac('sha256', opts.signingKey).update(`${u.key}\n${u.contentType}\n${u.maxBytes}\n${u.expires}`).digest('base64url');
  const file = (key: string) => path.join(opts.dir, key.replace(/[^A-Za-z0-9_-]/g, '_'));
  const storage: VideoStorage & { receive(u: SignedUpload, signature: string, now: Date, body: Readable): Promise<number> } = {
    kind: 'data-directory',
    async uploadUrl(key, contentType, maxBytes, expiresAt) {
      const u = { key, contentType, maxBytes, expires: expiresAt.getTime() };
      const q = new URLSearchParams({ contentType, maxBytes: String(maxBytes), expires: String(u.expires), signature: sign(u) });
      // Absolute, as object storage's presigned URLs are: the client PUTs to it as it is.
      const base = (opts.baseUrl() ?? '').replace(/\/+$/, '');
      return { url: `${base}/api/v0/wiki/${key}/video?${q}`, headers: { 'content-type': contentType } };
    },
    async exists(key) {
      return fs.stat(file(key)).then(
        () => true,
        () => false,
      );
    },
    async remove(key) {
      await fs.rm(file(key), { force: true });
    },
    /** Checks the signature and expiry, then streams the body to disk, refusing more than maxBytes. */
    async receive(u, signature, now, body) {
      const expected = Buffer.from(sign(u));
      const given = Buffer.from(signature);
      if (expected.length !== given.length || !timingSafeEqual(expected, given))
        throw new Forbidden("The upload URL's signature does not match; ask POST /api/v0/wiki/video-upload-url for a new one");
      if (now.getTime() > u.expires) throw new Forbidden('The upload URL has expired; ask POST /api/v0/wiki/video-upload-url for a new one');
      await fs.mkdir(opts.dir, { recursive: true });
      const partial = `${file(u.key)}.${process.pid}.${Date.now()}.part`;
      let size = 0;
      const limit = new Transform({
        transform(chunk: Buffer, _enc, done) {
          size += chunk.length;
          done(size > u.maxBytes ? new PayloadTooLarge(`The video is larger than the ${u.maxBytes} bytes its upload URL allows`) : null, chunk);
        },
      });
      try {
        await pipeline(body, limit, createWriteStream(partial));
        await fs.rename(partial, file(u.key));
      } catch (err) {
        await fs.rm(partial, { force: true });
        throw err;
      }
      return size;
    },
  };
  return storage;
}
export type DataDirectoryVideoStorage = ReturnType<typeof dataDirectoryVideoStorage>;
