import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../support/api.ts';
import { minioBinary, startMinio, type Minio } from '../support/minio.ts';
import { skipWithout } from '../support/parts.ts';

const BUCKET = 'wiki-videos';
const bin = minioBinary();
const skip = skipWithout('the wiki video tests on MinIO', bin ? undefined : 'MinIO is not built: run bash scripts/minio-toolchain.sh');

/**
 * Wiki videos on S3-compatible object storage, against a real MinIO built from its Go module
 * (scripts/minio-toolchain.sh): the presigned PUT goes straight to the store, which holds the
 * upload to the signed content type and length; the run sees the upload, and DELETE removes it.
 */
describe.skipIf(skip)('wiki videos on object storage (MinIO)', () => {
  let minio: Minio;
  let api: TestApi;

  beforeAll(async () => {
    minio = await startMinio(bin!);
    expect((await minio.request('PUT', `/${BUCKET}`)).status).toBe(200);
    api = await startTestApi('pglite', {
      env: {
        AGENTPLANE_WIKI_S3_ENDPOINT: minio.endpoint,
        AGENTPLANE_WIKI_S3_BUCKET: BUCKET,
        AGENTPLANE_WIKI_S3_REGION: minio.region,
        AGENTPLANE_WIKI_S3_ACCESS_KEY_ID: minio.accessKeyId,
        AGENTPLANE_WIKI_S3_SECRET_ACCESS_KEY: minio.secretAccessKey,
      },
    });
  }, 60_000);
  afterAll(async () => {
    await api?.close();
    await minio?.stop();
  });

  it('uploads through a presigned PUT, refuses another size or type, and deletes with the run', async () => {
    const as = api.acme.members.user.apiKey;
    const run = await api.call('POST', '/api/v0/wiki', {
      as,
      body: { repoUrl: 'https://github.com/acme/video', pages: [{ path: 'overview', title: 'Overview', markdown: '# Video' }] },
    });
    const id = run.body.wikiRunId as string;
    const asked = await api.call('POST', '/api/v0/wiki/video-upload-url', { as, body: { wikiRunId: id, contentType: 'video/webm', sizeBytes: 1024 } });
    expect(asked.status, JSON.stringify(asked.body)).toBe(200);
    expect(asked.body).toMatchObject({ storage: 's3', method: 'PUT', headers: { 'content-type': 'video/webm', 'content-length': '1024' } });
    expect(asked.body.uploadUrl).toMatch(new RegExp(`^${minio.endpoint}/${BUCKET}/videos/${id}\\?.*X-Amz-Signature=`));
    expect((await api.call('GET', `/api/v0/wiki/${id}`, { as })).body.hasVideo).toBe(false);

    const wrongSize = await fetch(asked.body.uploadUrl, { method: 'PUT', headers: { 'content-type': 'video/webm' }, body: Buffer.alloc(2048, 1) });
    expect(wrongSize.status).toBe(403);
    const wrongType = await fetch(asked.body.uploadUrl, { method: 'PUT', headers: { 'content-type': 'text/html' }, body: Buffer.alloc(1024, 1) });
    expect(wrongType.status).toBe(403);
    const put = await fetch(asked.body.uploadUrl, { method: 'PUT', headers: { 'content-type': 'video/webm' }, body: Buffer.alloc(1024, 3) });
    expect(put.status, await put.text()).toBe(200);
    expect((await minio.request('HEAD', `/${BUCKET}/videos/${id}`)).status).toBe(200);
    expect((await api.call('GET', `/api/v0/wiki/${id}`, { as })).body.hasVideo).toBe(true);

    expect((await api.call('DELETE', `/api/v0/wiki/${id}`, { as })).status).toBe(200);
    expect((await minio.request('HEAD', `/${BUCKET}/videos/${id}`)).status).toBe(404);
  });
});
