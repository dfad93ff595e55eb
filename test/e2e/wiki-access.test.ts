import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../support/api.ts';
import { BACKENDS } from '../support/test-db.ts';
import { unzip } from '../support/wiki.ts';

const ERROR_KEYS = ['detail', 'status', 'title'];
const REPO = 'https://github.com/acme/widgets';

const uploadBody = (extra: Record<string, unknown> = {}) => ({
  repoUrl: REPO,
  commitHash: 'a'.repeat(40),
  branch: 'main',
  hasLocalChanges: false,
  agentVersion: 'cli 1.4.0',
  pages: [
    { path: 'overview', title: 'Overview', markdown: '# Widgets\n\nSee [the parser](parsing/parser.md).\n' },
    { path: 'parsing', title: 'Parsing', markdown: '# Parsing\n\nThe [overview](../overview.md) first.\n' },
    {
      path: 'parsing/parser',
      title: 'Parser',
      markdown: '# Parser\n\n## `parseWidgetSpec`\n\nparseWidgetSpec reads a widget specification.\n',
      sources: [{ path: 'src/parser.ts', blobSha: 'b'.repeat(40), lines: [[1, 40]] }],
    },
  ],
  ...extra,
});

describe.each(BACKENDS)('wiki access and uploads on %s', (backend) => {
  let api: TestApi;
  let m: TestApi['acme']['members'];

  beforeAll(async () => {
    api = await startTestApi(backend);
    m = api.acme.members;
  });
  afterAll(async () => api?.close());

  function expectError(res: { status: number; body: any }, status: number, detail?: RegExp) {
    expect(res.status, JSON.stringify(res.body)).toBe(status);
    expect(
      Object.keys(res.body)
        .filter((k) => k !== 'metadata')
        .sort(),
    ).toEqual(ERROR_KEYS);
    expect(res.body.status).toBe(status);
    if (detail) expect(res.body.detail).toMatch(detail);
  }

  async function upload(as: string, extra: Record<string, unknown> = {}) {
    const res = await api.call('POST', '/api/v0/wiki', { as, body: uploadBody(extra) });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body;
  }

  describe('upload', () => {
    it('stores an uploaded wiki as a succeeded run with its tree, sources and links', async () => {
      const run = await upload(m.user.apiKey);
      expect(run).toMatchObject({
        source: 'upload',
        status: 'succeeded',
        pageCount: 3,
        pagesGenerated: 3,
        pagesReused: 0,
        commitHash: 'a'.repeat(40),
        agentVersion: 'cli 1.4.0',
        hasLocalChanges: false,
        privacy: 'organization',
        publicUrl: null,
        createdBy: { kind: 'user', id: m.user.userId },
      });
      const detail = await api.call('GET', `/api/v0/wiki/${run.wikiRunId}`, { as: m.user.apiKey });
      expect(detail.body.pages).toEqual([
        { pageId: 'overview', title: 'Overview', path: 'overview', parentId: null, order: 0 },
        { pageId: 'parsing', title: 'Parsing', path: 'parsing', parentId: null, order: 1 },
        { pageId: 'parsing.parser', title: 'Parser', path: 'parsing/parser', parentId: 'parsing', order: 0 },
      ]);
      const parser = await api.call('GET', `/api/v0/wiki/${run.wikiRunId}/pages/parsing.parser`, { as: m.user.apiKey });
      expect(parser.body).toMatchObject({
        title: 'Parser',
        path: 'parsing/parser',
        parentId: 'parsing',
        sources: [{ path: 'src/parser.ts', blobSha: 'b'.repeat(40), lines: [[1, 40]] }],
        linksOut: [],
        linksIn: [{ pageId: 'overview', title: 'Overview', path: 'overview' }],
      });
      const search = await api.call('GET', `/api/v0/wiki/${run.wikiRunId}/search?q=${encodeURIComponent('widget spec')}`, { as: m.user.apiKey });
      expect(search.body.results[0]).toMatchObject({ pageId: 'parsing.parser' });
      const files = await unzip(
        Buffer.from(
          await (await fetch(`${api.url}/api/v0/wiki/${run.wikiRunId}/export`, { headers: { authorization: `Bearer ${m.user.apiKey}` } })).arrayBuffer(),
        ),
      );
      expect([...files.keys()].sort()).toEqual(['.wiki-meta.json', 'index.md', 'overview.md', 'parsing/index.md', 'parsing/parser.md']);
    });

    it.each([
      ['a dead link', { pages: [{ path: 'a', title: 'A', markdown: '[gone](b.md)' }] }, /page a links to b.md, which is not a page of the run/],
      ['a page without its parent', { pages: [{ path: 'a/b', title: 'B', markdown: 'x' }] }, /page a\/b has no parent page a/],
      [
        'a duplicate path',
        {
          pages: [
            { path: 'a', title: 'A', markdown: 'x' },
            { path: 'a', title: 'A2', markdown: 'y' },
          ],
        },
        /page a is sent twice/,
      ],
      ['three levels', { pages: [{ path: 'a/b/c', title: 'C', markdown: 'x' }] }, /pages\.0\.path: must be one or two lower-case slugs/],
      ['an empty page list', { pages: [] }, /pages: must hold at least one page/],
      ['model on an upload', { model: 'sonnet' }, /computerId and model apply to generated runs/],
      ['a repoUrl that is no URL', { repoUrl: 'not a repo' }, /repoUrl: must be a repository URL/],
      ['an unknown field', { wikiRunId: 'x' }, /Unrecognized key: "wikiRunId"/],
    ])('refuses %s with 400', async (_name, change, detail) => {
      expectError(await api.call('POST', '/api/v0/wiki', { as: m.user.apiKey, body: { ...uploadBody(), ...change } }), 400, detail);
    });

    it('refuses generation from a file:// URL and an unknown model with 400', async () => {
      expectError(await api.call('POST', '/api/v0/wiki', { as: m.user.apiKey, body: { repoUrl: 'file:///etc' } }), 400, /cannot be cloned/);
      expectError(
        await api.call('POST', '/api/v0/wiki', { as: m.user.apiKey, body: { repoUrl: REPO, model: 'no-such-model' } }),
        400,
        /model no-such-model is not configured/,
      );
      expectError(await api.call('POST', '/api/v0/wiki', { as: m.user.apiKey, body: { repoUrl: 'http://127.0.0.1:9/x.git' } }), 400, /loopback/);
    });

    it('lets guests read but not create, and needs a credential', async () => {
      const run = await upload(m.user.apiKey);
      expectError(await api.call('POST', '/api/v0/wiki', { as: m.guest.apiKey, body: uploadBody() }), 403, /Guests can read wiki runs but not create them/);
      expect((await api.call('GET', `/api/v0/wiki/${run.wikiRunId}`, { as: m.guest.jwt })).status).toBe(200);
      expectError(await api.call('GET', '/api/v0/wiki'), 401);
      expectError(await api.call('GET', `/api/v0/wiki/${run.wikiRunId}`), 401);
      expectError(await api.call('POST', '/api/v0/wiki', { body: uploadBody() }), 401);
      expect((await api.call('POST', '/api/v0/wiki', { as: api.acme.serviceAccount.apiKey, body: uploadBody() })).body.createdBy).toEqual({
        kind: 'service_account',
        id: api.acme.serviceAccount.id,
      });
    });
  });

  describe('privacy', () => {
    it('follows the matrix: private for creator, managers, owners; organization for members; public for the link', async () => {
      const run = await upload(m.user.apiKey, { privacy: 'private' });
      const path = `/api/v0/wiki/${run.wikiRunId}`;
      const reads = async () => ({
        owner: (await api.call('GET', path, { as: m.owner.apiKey })).status,
        manager: (await api.call('GET', path, { as: m.manager.jwt })).status,
        creator: (await api.call('GET', path, { as: m.user.apiKey })).status,
        guest: (await api.call('GET', path, { as: m.guest.apiKey })).status,
        robot: (await api.call('GET', path, { as: api.acme.serviceAccount.apiKey })).status,
        otherOrg: (await api.call('GET', path, { as: api.globex.members.owner.apiKey })).status,
        anonymous: (await api.call('GET', path)).status,
      });
      expect(await reads()).toEqual({ owner: 200, manager: 200, creator: 200, guest: 404, robot: 404, otherOrg: 404, anonymous: 401 });
      const listedToGuest = await api.call('GET', '/api/v0/wiki', { as: m.guest.apiKey });
      expect(listedToGuest.body.wikiRuns.map((r: any) => r.wikiRunId)).not.toContain(run.wikiRunId);
      expect((await api.call('GET', `${path}/pages/overview`, { as: m.guest.apiKey })).status).toBe(404);
      expect((await api.call('GET', `${path}/search?q=parser`, { as: m.guest.apiKey })).status).toBe(404);
      expect((await api.call('GET', `${path}/export`, { as: m.guest.apiKey })).status).toBe(404);

      const toOrg = await api.call('POST', `${path}/privacy`, { as: m.user.apiKey, body: { privacy: 'organization' } });
      expect(toOrg.body.privacy).toBe('organization');
      expect(await reads()).toEqual({ owner: 200, manager: 200, creator: 200, guest: 200, robot: 200, otherOrg: 404, anonymous: 401 });

      const toPublic = await api.call('POST', `${path}/privacy`, { as: m.manager.apiKey, body: { privacy: 'public' } });
      expect(toPublic.body.publicUrl).toMatch(new RegExp(`^/api/v0/wiki/${run.wikiRunId}\\?publicToken=[a-z0-9]{32}$`));
      const link = toPublic.body.publicUrl as string;
      const token = new URL(link, api.url).searchParams.get('publicToken')!;
      const anonymous = await api.call('GET', link);
      expect(anonymous.status).toBe(200);
      expect(anonymous.body.pages).toHaveLength(3);
      expect((await api.call('GET', `${path}/pages/parsing.parser?publicToken=${token}`)).status).toBe(200);
      expect((await api.call('GET', `${path}/search?q=parser&publicToken=${token}`)).body.results.length).toBeGreaterThan(0);
      expect((await fetch(`${api.url}${path}/export?publicToken=${token}`)).status).toBe(200);
      expect((await api.call('GET', `${path}?publicToken=${token}`, { as: api.globex.members.user.apiKey })).status).toBe(200);
      expectError(await api.call('GET', `${path}?publicToken=wrong`), 404);
      expectError(await api.call('GET', path), 401);
      const otherOrgList = await api.call('GET', '/api/v0/wiki', { as: api.globex.members.owner.apiKey });
      expect(otherOrgList.body.wikiRuns).toEqual([]);

      // Back to private: the link stops working; public again: a new link.
      await api.call('POST', `${path}/privacy`, { as: m.user.apiKey, body: { privacy: 'private' } });
      expectError(await api.call('GET', link), 404);
      const again = await api.call('POST', `${path}/privacy`, { as: m.user.apiKey, body: { privacy: 'public' } });
      expect(again.body.publicUrl).not.toBe(link);
    });

    it('lets only the creator, managers and owners change privacy or delete', async () => {
      const run = await upload(m.user.apiKey);
      const path = `/api/v0/wiki/${run.wikiRunId}`;
      expectError(await api.call('POST', `${path}/privacy`, { as: m.guest.apiKey, body: { privacy: 'public' } }), 403, /creator, managers and owners/);
      expectError(await api.call('DELETE', path, { as: api.acme.serviceAccount.apiKey }), 403);
      expectError(await api.call('DELETE', path, { as: api.globex.members.owner.apiKey }), 404);
      expectError(
        await api.call('POST', `${path}/privacy`, { as: m.user.apiKey, body: { privacy: 'secret' } }),
        400,
        /privacy: must be one of private, organization, public/,
      );
      const deleted = await api.call('DELETE', path, { as: m.manager.apiKey });
      expect(deleted.body).toEqual({ wikiRunId: run.wikiRunId, deleted: true });
      expectError(await api.call('GET', path, { as: m.owner.apiKey }), 404, /No wiki run/);
      expect(await api.db.prisma.wikiPage.count({ where: { runId: run.wikiRunId } })).toBe(0);
      expectError(await api.call('DELETE', path, { as: m.owner.apiKey }), 404);
      expectError(await api.call('GET', '/api/v0/wiki/not-a-uuid', { as: m.owner.apiKey }), 404);
    });
  });

  describe('lists', () => {
    it("lists the newest run per repository and each repository's history, keyset-paged", async () => {
      const org = api.globex.members;
      const runs = [];
      for (const repo of ['https://github.com/globex/a', 'https://github.com/globex/b', 'https://github.com/globex/a'])
        runs.push(await upload(org.user.apiKey, { repoUrl: repo }));
      const first = await api.call('GET', '/api/v0/wiki?limit=1', { as: org.guest.apiKey });
      expect(first.body.wikiRuns.map((r: any) => r.wikiRunId)).toEqual([runs[2].wikiRunId]);
      expect(first.body.pagination.hasMore).toBe(true);
      const second = await api.call('GET', `/api/v0/wiki?limit=1&cursor=${first.body.pagination.nextCursor}`, { as: org.guest.apiKey });
      expect(second.body.wikiRuns.map((r: any) => r.wikiRunId)).toEqual([runs[1].wikiRunId]);
      expect(second.body.pagination).toEqual({ hasMore: false, nextCursor: null });
      const history = await api.call('GET', `/api/v0/wiki/history/${encodeURIComponent('https://github.com/GLOBEX/a.git')}`, { as: org.user.apiKey });
      expect(history.body.wikiRuns.map((r: any) => r.wikiRunId)).toEqual([runs[2].wikiRunId, runs[0].wikiRunId]);
      expectError(await api.call('GET', `/api/v0/wiki/history/${encodeURIComponent('not a url')}`, { as: org.user.apiKey }), 400, /not a repository URL/);
      expectError(await api.call('GET', '/api/v0/wiki?cursor=bogus', { as: org.user.apiKey }), 400, /cursor/);
      expectError(await api.call('GET', '/api/v0/wiki?limit=0', { as: org.user.apiKey }), 400, /limit/);
    });
  });

  describe('video', () => {
    it('issues a signed, expiring upload URL and stores the upload in the data directory', async () => {
      const run = await upload(m.user.apiKey);
      const asked = await api.call('POST', '/api/v0/wiki/video-upload-url', {
        as: m.user.apiKey,
        body: { wikiRunId: run.wikiRunId, contentType: 'video/mp4', sizeBytes: 2048 },
      });
      expect(asked.status, JSON.stringify(asked.body)).toBe(200);
      expect(asked.body).toMatchObject({ method: 'PUT', storage: 'data-directory', maxBytes: 2048, headers: { 'content-type': 'video/mp4' } });
      expect(asked.body.expiresAt).toBeGreaterThan(Date.now());
      const url = asked.body.uploadUrl;
      expect(url.startsWith(`${api.url}/api/v0/wiki/`)).toBe(true);
      const tooBig = await fetch(url, { method: 'PUT', headers: asked.body.headers, body: Buffer.alloc(4096, 1) });
      expect(tooBig.status).toBe(413);
      const tampered = await fetch(url.replace('maxBytes=2048', 'maxBytes=99999'), { method: 'PUT', headers: asked.body.headers, body: Buffer.alloc(10) });
      expect(tampered.status).toBe(403);
      const put = await fetch(url, { method: 'PUT', headers: asked.body.headers, body: Buffer.alloc(2048, 7) });
      expect(put.status).toBe(200);
      expect((await api.call('GET', `/api/v0/wiki/${run.wikiRunId}`, { as: m.user.apiKey })).body.hasVideo).toBe(true);
      expectError(
        await api.call('POST', '/api/v0/wiki/video-upload-url', {
          as: m.user.apiKey,
          body: { wikiRunId: run.wikiRunId, contentType: 'application/x-sh', sizeBytes: 10 },
        }),
        400,
        /contentType: must be one of video\/mp4/,
      );
      expectError(
        await api.call('POST', '/api/v0/wiki/video-upload-url', {
          as: m.user.apiKey,
          body: { wikiRunId: run.wikiRunId, contentType: 'video/mp4', sizeBytes: 10 ** 12 },
        }),
        400,
        /AGENTPLANE_WIKI_VIDEO_MAX_BYTES/,
      );
      expectError(
        await api.call('POST', '/api/v0/wiki/video-upload-url', {
          as: m.guest.apiKey,
          body: { wikiRunId: run.wikiRunId, contentType: 'video/mp4', sizeBytes: 10 },
        }),
        403,
      );
      await api.call('DELETE', `/api/v0/wiki/${run.wikiRunId}`, { as: m.user.apiKey });
      const fs = await import('node:fs');
      expect(fs.existsSync(`${api.dataDir}/wiki-videos/${run.wikiRunId}`)).toBe(false);
    });
  });

  describe('the wikiCloudSync switch', () => {
    it('answers 403 on every wiki endpoint while enterprise controls say wikiCloudSync: false', async () => {
      const run = await upload(m.user.apiKey, { privacy: 'public' });
      const token = new URL(run.publicUrl, api.url).searchParams.get('publicToken');
      const put = await api.call('PUT', '/api/v0/organization/enterprise-controls', { as: m.owner.apiKey, body: { settings: { wikiCloudSync: false } } });
      expect(put.status, JSON.stringify(put.body)).toBe(200);
      const id = run.wikiRunId;
      const calls: [string, string, unknown?][] = [
        ['GET', '/api/v0/wiki'],
        ['POST', '/api/v0/wiki', uploadBody()],
        ['GET', `/api/v0/wiki/history/${encodeURIComponent(REPO)}`],
        ['POST', '/api/v0/wiki/video-upload-url', { wikiRunId: id, contentType: 'video/mp4', sizeBytes: 10 }],
        ['GET', `/api/v0/wiki/${id}`],
        ['DELETE', `/api/v0/wiki/${id}`],
        ['GET', `/api/v0/wiki/${id}/export`],
        ['GET', `/api/v0/wiki/${id}/pages/overview`],
        ['POST', `/api/v0/wiki/${id}/privacy`, { privacy: 'private' }],
        ['GET', `/api/v0/wiki/${id}/search?q=parser`],
      ];
      for (const [method, path, body] of calls) expectError(await api.call(method, path, { as: m.owner.apiKey, body }), 403, /wikiCloudSync is false/);
      expectError(await api.call('GET', `/api/v0/wiki/${id}?publicToken=${token}`), 403, /wikiCloudSync/);
      await api.call('PUT', '/api/v0/organization/enterprise-controls', { as: m.owner.apiKey, body: { settings: { wikiCloudSync: true } } });
      expect((await api.call('GET', `/api/v0/wiki/${id}`, { as: m.owner.apiKey })).status).toBe(200);
    });
  });
});
