import { z } from 'zod';
import { defineRoute } from '../../http/route.ts';
import type { DataDirectoryVideoStorage } from './video/data-directory.ts';
import {
  CreateRunBodySchema,
  HistoryParamsSchema,
  ListQuerySchema,
  PageParamsSchema,
  PrivacyBodySchema,
  PublicReadQuerySchema,
  RunParamsSchema,
  SearchQuerySchema,
  VIDEO_CONTENT_TYPES,
  VideoUploadBodySchema,
  VideoUploadUrlSchema,
  WikiHistorySchema,
  WikiPageSchema,
  WikiRunDetailSchema,
  WikiRunListSchema,
  WikiRunSchema,
  SearchResultSchema,
} from './schemas.ts';
import type { WikiService } from './service.ts';
import { missingCredentials } from './access.ts';

const TAGS = ['Wiki'];
/** A caller without a credential reads a run only through its public link's token. */
const PUBLIC_LINK = { query: 'publicToken', missing: missingCredentials };
const BASE = '/api/v0/wiki';

const SignedVideoQuerySchema = z.strictObject({
  contentType: z.enum(VIDEO_CONTENT_TYPES),
  maxBytes: z.coerce.number().int().min(1),
  expires: z.coerce.number().int(),
  signature: z.string().min(1),
});

export function wikiRoutes(service: WikiService, opts: { dataDirectoryVideos?: DataDirectoryVideoStorage; clock: { now(): Date }; uploadLimit: string }) {
  const routes = [
    defineRoute({
      method: 'get',
      path: BASE,
      operationId: 'GetListTheLatestWikiRuns',
      summary: 'List the latest wiki run of each repository',
      tags: TAGS,
      query: ListQuerySchema,
      responses: { 200: { description: 'Runs, newest first', schema: WikiRunListSchema } },
      errors: [400, 401, 403, 500],
      handler: async ({ principal, query }) => ({ status: 200, body: await service.list(principal, query) }),
    }),
    defineRoute({
      method: 'post',
      path: BASE,
      operationId: 'PostCreateAWikiRun',
      summary: 'Create a wiki run: upload pages generated elsewhere, or have agentplane generate them',
      tags: TAGS,
      body: CreateRunBodySchema,
      // Uploaded wikis carry their pages: larger than other requests.
      bodyLimit: opts.uploadLimit,
      responses: { 200: { description: 'The run (an upload has succeeded; a generation is queued)', schema: WikiRunSchema } },
      errors: [400, 401, 403, 404, 413, 500],
      handler: async ({ principal, body }) => ({ status: 200, body: await service.create(principal, body) }),
    }),
    defineRoute({
      method: 'get',
      path: `${BASE}/history/{repoUrl}`,
      operationId: 'GetListWikiRunHistoryForARepository',
      summary: 'List every wiki run of one repository (URL-encoded repoUrl)',
      tags: TAGS,
      params: HistoryParamsSchema,
      query: ListQuerySchema,
      responses: { 200: { description: 'Runs, newest first', schema: WikiHistorySchema } },
      errors: [400, 401, 403, 500],
      handler: async ({ principal, params, query }) => ({ status: 200, body: await service.history(principal, params.repoUrl, query) }),
    }),
    defineRoute({
      method: 'post',
      path: `${BASE}/video-upload-url`,
      operationId: 'PostCreateAWikiVideoUploadUrl',
      summary: 'Create a signed, expiring URL to upload a video of a run',
      tags: TAGS,
      body: VideoUploadBodySchema,
      responses: { 200: { description: 'Where and how to PUT the video', schema: VideoUploadUrlSchema } },
      errors: [400, 401, 403, 404, 500],
      handler: async ({ principal, body }) => ({ status: 200, body: await service.videoUploadUrl(principal, body) }),
    }),
    defineRoute({
      method: 'get',
      path: `${BASE}/{wikiRunId}`,
      operationId: 'GetGetAWikiRun',
      summary: 'Get a wiki run and its page tree',
      tags: TAGS,
      auth: 'optional',
      anonymousCredential: PUBLIC_LINK,
      params: RunParamsSchema,
      query: PublicReadQuerySchema,
      responses: { 200: { description: 'The run', schema: WikiRunDetailSchema } },
      errors: [401, 403, 404, 500],
      handler: async ({ principal, params, query }) => ({ status: 200, body: await service.get(principal, params.wikiRunId, query.publicToken) }),
    }),
    defineRoute({
      method: 'delete',
      path: `${BASE}/{wikiRunId}`,
      operationId: 'DeleteDeleteAWikiRun',
      summary: 'Delete a wiki run, its pages, search index entries and video',
      tags: TAGS,
      params: RunParamsSchema,
      responses: { 200: { description: 'Deleted', schema: z.strictObject({ wikiRunId: z.string(), deleted: z.literal(true) }) } },
      errors: [401, 403, 404, 500],
      handler: async ({ principal, params }) => {
        await service.remove(principal, params.wikiRunId);
        return { status: 200, body: { wikiRunId: params.wikiRunId, deleted: true } };
      },
    }),
    defineRoute({
      method: 'get',
      path: `${BASE}/{wikiRunId}/export`,
      operationId: 'GetExportAWikiRun',
      summary: 'A zip of the run: Markdown pages laid out by the tree, index.md, .wiki-meta.json',
      tags: TAGS,
      auth: 'optional',
      anonymousCredential: PUBLIC_LINK,
      params: RunParamsSchema,
      query: PublicReadQuerySchema,
      responses: { 200: { description: 'application/zip, streamed' } },
      errors: [401, 403, 404, 409, 500],
      handler: async ({ principal, params, query }) => {
        const zip = await service.exportRun(principal, params.wikiRunId, query.publicToken);
        return {
          status: 200,
          headers: { 'content-type': 'application/zip', 'content-disposition': `attachment; filename="${zip.fileName}"` },
          stream: zip.write,
        };
      },
    }),
    defineRoute({
      method: 'get',
      path: `${BASE}/{wikiRunId}/pages/{pageId}`,
      operationId: 'GetGetAWikiPage',
      summary: 'One page: Markdown, title, path, cited sources, links in and out',
      tags: TAGS,
      auth: 'optional',
      anonymousCredential: PUBLIC_LINK,
      params: PageParamsSchema,
      query: PublicReadQuerySchema,
      responses: { 200: { description: 'The page', schema: WikiPageSchema } },
      errors: [401, 403, 404, 500],
      handler: async ({ principal, params, query }) => ({
        status: 200,
        body: await service.page(principal, params.wikiRunId, params.pageId, query.publicToken),
      }),
    }),
    defineRoute({
      method: 'post',
      path: `${BASE}/{wikiRunId}/privacy`,
      operationId: 'PostUpdatePrivacyLevel',
      summary: 'Set the privacy level: private, organization or public',
      tags: TAGS,
      params: RunParamsSchema,
      body: PrivacyBodySchema,
      responses: { 200: { description: 'The run', schema: WikiRunSchema } },
      errors: [400, 401, 403, 404, 500],
      handler: async ({ principal, params, body }) => ({ status: 200, body: await service.setPrivacy(principal, params.wikiRunId, body.privacy) }),
    }),
    defineRoute({
      method: 'get',
      path: `${BASE}/{wikiRunId}/search`,
      operationId: 'GetSearchAWikiRun',
      summary: "Full-text search of the run's pages: ranked hits with highlighted snippets",
      tags: TAGS,
      auth: 'optional',
      anonymousCredential: PUBLIC_LINK,
      params: RunParamsSchema,
      query: SearchQuerySchema,
      responses: { 200: { description: 'Hits, best first', schema: SearchResultSchema } },
      errors: [400, 401, 403, 404, 500],
      handler: async ({ principal, params, query }) => ({ status: 200, body: await service.search(principal, params.wikiRunId, query) }),
    }),
  ];
  const videos = opts.dataDirectoryVideos;
  if (videos) {
    routes.push(
      defineRoute({
        method: 'put',
        path: `${BASE}/{wikiRunId}/video`,
        operationId: 'PutUploadAWikiVideo',
        summary: 'The signed upload URL of data-directory video storage (the signature is the credential)',
        tags: TAGS,
        auth: false,
        params: RunParamsSchema,
        query: SignedVideoQuerySchema,
        responses: { 200: { description: 'Stored', schema: z.strictObject({ wikiRunId: z.string(), sizeBytes: z.number().int() }) } },
        errors: [400, 403, 413, 500],
        handler: async ({ params, query, bodyStream }) => {
          const { signature, ...signed } = query;
          const sizeBytes = await videos.receive({ key: params.wikiRunId, ...signed }, signature, opts.clock.now(), bodyStream);
          await service.videoUploaded(params.wikiRunId);
          return { status: 200, body: { wikiRunId: params.wikiRunId, sizeBytes } };
        },
      }),
    );
  }
  return routes;
}
