import aws4 from 'aws4';
import type { VideoStorage } from './storage.ts';

export interface S3Settings {
  /** e.g. https://s3.eu-west-1.amazonaws.com or a MinIO address; default AWS's regional endpoint. */
  endpoint?: string;
  bucket: string;
  region: string;
  accessKeyId?: string;
  secretAccessKey?: string;
}

/**
 * Videos in S3-compatible object storage, uploaded by the client straight to the store with a
 * presigned PUT (SigV4 in the query, signed with `aws4`): the control plane never handles the
 * bytes. Content type and length are signed headers, so the store refuses any other type or size.
 * Objects are addressed path-style (`<endpoint>/<bucket>/<key>`), which every S3-compatible store
 * accepts. Existence and removal are signed requests from the control plane (operator
 * configuration, not a tenant's URL, so they do not pass the egress guard).
 */
export function s3VideoStorage(settings: S3Settings, fetchFn: typeof fetch = fetch): VideoStorage {
  const base = new URL(settings.endpoint ?? `https://s3.${settings.region}.amazonaws.com`);
  const credentials = { accessKeyId: settings.accessKeyId ?? '', secretAccessKey: settings.secretAccessKey ?? '' };
  const objectPath = (key: string) => `${base.pathname.replace(/\/$/, '')}/${encodeURIComponent(settings.bucket)}/videos/${encodeURIComponent(key)}`;
  const signed = (method: string, key: string, extra: { headers?: Record<string, string>; query?: string } = {}) =>
    aws4.sign(
      {
        host: base.host,
        path: `${objectPath(key)}${extra.query ?? ''}`,
        method,
        service: 's3',
        region: settings.region,
        headers: extra.headers ?? {},
        signQuery: extra.query !== undefined,
      },
      credentials,
    );
  const send = (method: string, key: string) => {
    const req = signed(method, key);
    return fetchFn(`${base.protocol}//${base.host}${req.path}`, { method, headers: req.headers as Record<string, string> });
  };
  return {
    kind: 's3',
    async uploadUrl(key, contentType, maxBytes, expiresAt) {
      const seconds = Math.max(1, Math.round((expiresAt.getTime() - Date.now()) / 1000));
      const headers = { 'content-type': contentType, 'content-length': String(maxBytes) };
      const req = signed('PUT', key, { headers, query: `?X-Amz-Expires=${seconds}` });
      return { url: `${base.protocol}//${base.host}${req.path}`, headers };
    },
    async exists(key) {
      const res = await send('HEAD', key);
      if (res.status === 404) return false;
      if (!res.ok) throw new Error(`object storage answered ${res.status} for the video of ${key}`);
      return true;
    },
    async remove(key) {
      const res = await send('DELETE', key);
      if (!res.ok && res.status !== 404) throw new Error(`object storage answered ${res.status} deleting the video of ${key}`);
    },
  };
}
