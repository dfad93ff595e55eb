import { z } from 'zod';
import { roleAtLeast, type Principal } from '../../auth/principal.ts';
import { Prisma } from '../../generated/prisma/client.ts';
import { encodeCursor, decodeCursor, pageQuery, toPage, type PageQuery } from '../../http/pagination.ts';
import { BadRequest, Conflict, NotFound } from '../../lib/errors.ts';
import { newUuid, randomToken } from '../../lib/ids.ts';
import { repoKey } from '../../repos/policy.ts';
import { knownModel } from '../../agent/models.ts';
import { enterpriseSettingsOf } from '../organization/enterprise-settings.ts';
import { assertCanCreate, assertCanManage, assertCanRead, assertWikiEnabled, creatorOf, missingCredentials, runNotFound } from './access.ts';
import { treeOrder } from './assemble.ts';
import type { WikiDeps } from './deps.ts';
import { streamExport } from './export.ts';
import { enqueueGeneration } from './jobs.ts';
import type { CitedSource } from './page.ts';
import type { CreateRunBody, SearchQuery, VideoUploadBody } from './schemas.ts';
import { searchRun } from './search.ts';
import { storePages } from './store.ts';
import { uploadedPages } from './upload.ts';
import { toWikiRun } from './views.ts';

/** How long a video upload URL stays valid. */
const VIDEO_URL_TTL_MS = 15 * 60_000;

const PUBLIC_TOKEN_LENGTH = 32;

export function createWikiService(deps: WikiDeps & { videoMaxBytes: number }) {
  const { db, clock } = deps;

  /** The run `id` as `caller` (or an anonymous holder of a public link) may read it; 404 otherwise. */
  async function readableRun(id: string, caller: Principal | undefined, publicToken?: string) {
    const row = z.uuid().safeParse(id).success ? await db.wikiRun.findUnique({ where: { id } }) : null;
    if (!row) {
      if (!caller && publicToken === undefined) throw missingCredentials();
      if (caller) await assertWikiEnabled(db, caller.organizationId);
      throw runNotFound(id);
    }
    if (caller) await assertWikiEnabled(db, caller.organizationId);
    assertCanRead(row, caller, publicToken);
    // A public link answers for the run's organization, so the organization's switch applies to it too.
    if (!caller || caller.organizationId !== row.organizationId) await assertWikiEnabled(db, row.organizationId);
    return row;
  }

  /** `private` runs are listed only to their creator, managers and owners. */
  function visibleWhere(caller: Principal): Prisma.Sql {
    if (roleAtLeast(caller.role, 'manager')) return Prisma.sql`TRUE`;
    const c = creatorOf(caller);
    return Prisma.sql`(privacy <> 'private' OR (creator_kind = ${c.creatorKind} AND creator_id = ${c.creatorId}))`;
  }

  return {
    /** The newest run of each repository the caller may read, newest first, keyset-paged. */
    async list(caller: Principal, page: PageQuery) {
      await assertWikiEnabled(db, caller.organizationId);
      const after = page.cursor ? decodeCursor(page.cursor) : undefined;
      const rows = await db.$queryRaw<{ id: string; created_at: Date }[]>(Prisma.sql`
        SELECT id, created_at FROM (
          SELECT DISTINCT ON (repo_key) id, created_at FROM wiki_runs
          WHERE organization_id = ${caller.organizationId} AND ${visibleWhere(caller)}
          ORDER BY repo_key, created_at DESC, id DESC
        ) latest
        WHERE ${after ? Prisma.sql`(created_at, id) < (${after.createdAt}, ${after.id}::uuid)` : Prisma.sql`TRUE`}
        ORDER BY created_at DESC, id DESC
        LIMIT ${page.limit + 1}`);
      const hasMore = rows.length > page.limit;
      const ids = rows.slice(0, page.limit).map((r) => r.id);
      const runs = await db.wikiRun.findMany({ where: { id: { in: ids } } });
      const byId = new Map(runs.map((r) => [r.id, r]));
      const items = ids.map((id) => byId.get(id)!);
      return {
        wikiRuns: items.map(toWikiRun),
        pagination: { hasMore, nextCursor: hasMore ? encodeCursor(items[items.length - 1]!) : null },
      };
    },

    /** Every run of one repository the caller may read, newest first. */
    async history(caller: Principal, rawRepoUrl: string, page: PageQuery) {
      await assertWikiEnabled(db, caller.organizationId);
      const key = repoKey(rawRepoUrl);
      if (!key)
        throw new BadRequest(
          `${rawRepoUrl} is not a repository URL; URL-encode it into the path, e.g. /api/v0/wiki/history/${encodeURIComponent('https://github.com/acme/app')}`,
        );
      const q = pageQuery(page);
      const manager = roleAtLeast(caller.role, 'manager');
      const c = creatorOf(caller);
      const rows = await db.wikiRun.findMany({
        where: {
          organizationId: caller.organizationId,
          repoKey: key,
          ...(manager ? {} : { OR: [{ privacy: { not: 'private' } }, { creatorKind: c.creatorKind, creatorId: c.creatorId }] }),
          ...q.where,
        },
        orderBy: q.orderBy,
        take: q.take,
      });
      const { items, pagination } = toPage(rows, page);
      return { repoUrl: rawRepoUrl, wikiRuns: items.map(toWikiRun), pagination };
    },

    /** Upload (pages in the body: stored at once, succeeded) or generate (queued for the job). */
    async create(caller: Principal, body: CreateRunBody) {
      await assertWikiEnabled(db, caller.organizationId);
      assertCanCreate(caller);
      const now = clock.now();
      const id = newUuid();
      const privacy = body.privacy ?? 'organization';
      const base = {
        id,
        organizationId: caller.organizationId,
        ...creatorOf(caller),
        requestedBy: caller as object,
        repoUrl: body.repoUrl,
        repoKey: repoKey(body.repoUrl)!,
        branch: body.branch ?? null,
        commitHash: body.commitHash ?? null,
        hasLocalChanges: body.hasLocalChanges ?? null,
        agentVersion: body.agentVersion ?? null,
        privacy,
        publicToken: privacy === 'public' ? randomToken(PUBLIC_TOKEN_LENGTH) : null,
        createdAt: now,
      };
      if (body.pages) {
        const { pages, meta } = uploadedPages(body.pages, now);
        const row = await db.$transaction(async (tx) => {
          const created = await tx.wikiRun.create({
            data: {
              ...base,
              source: 'upload',
              status: 'succeeded',
              pageCount: pages.length,
              pagesGenerated: pages.length,
              meta: meta as object,
              startedAt: now,
              completedAt: now,
            },
          });
          await storePages(tx, id, pages);
          return created;
        });
        return toWikiRun(row);
      }
      if (body.model !== undefined) {
        const settings = await enterpriseSettingsOf(db, caller.organizationId);
        if (!knownModel(body.model, { enterpriseSettings: settings })) {
          throw new BadRequest(
            `model ${body.model} is not configured: use a model of the server's models file or custom:<id> of the organization's customModels`,
            {
              metadata: { errors: [{ field: 'model', message: 'unknown model' }] },
            },
          );
        }
      }
      if (body.computerId !== undefined) await deps.resolveComputerTarget(caller, body.computerId);
      else await deps.egress.screen(body.repoUrl);
      const row = await db.$transaction(async (tx) => {
        const created = await tx.wikiRun.create({
          data: { ...base, source: 'generate', status: 'queued', computerId: body.computerId ?? null, model: body.model ?? null },
        });
        await enqueueGeneration(deps.queue, id, tx);
        return created;
      });
      return toWikiRun(row);
    },

    async get(caller: Principal | undefined, id: string, publicToken?: string) {
      let row = await readableRun(id, caller, publicToken);
      // Object storage takes uploads without the control plane: a pending upload is looked for when the run is read.
      if (!row.videoKey && row.videoContentType && deps.video.kind === 's3' && (await deps.video.exists(row.id))) {
        row = await db.wikiRun.update({ where: { id: row.id }, data: { videoKey: row.id } });
      }
      const pages = treeOrder(
        await db.wikiPage.findMany({ where: { runId: row.id }, select: { id: true, title: true, path: true, parentId: true, position: true } }),
      );
      return { ...toWikiRun(row), pages: pages.map((p) => ({ pageId: p.id, title: p.title, path: p.path, parentId: p.parentId, order: p.position })) };
    },

    /** Removes the run, its pages (and with them their search documents) and its video. */
    async remove(caller: Principal, id: string) {
      const row = await readableRun(id, caller);
      assertCanManage(row, caller);
      await db.wikiRun.delete({ where: { id: row.id } });
      if (row.videoKey || row.videoContentType) await deps.video.remove(row.id);
    },

    async setPrivacy(caller: Principal, id: string, privacy: 'private' | 'organization' | 'public') {
      const row = await readableRun(id, caller);
      assertCanManage(row, caller);
      // A run made public again gets a new link, so a link shared before is not revived.
      const publicToken = privacy === 'public' ? (row.privacy === 'public' ? row.publicToken : randomToken(PUBLIC_TOKEN_LENGTH)) : null;
      const updated = await db.wikiRun.update({ where: { id: row.id }, data: { privacy, publicToken } });
      return toWikiRun(updated);
    },

    async page(caller: Principal | undefined, id: string, pageId: string, publicToken?: string) {
      const row = await readableRun(id, caller, publicToken);
      const page = await db.wikiPage.findUnique({ where: { runId_id: { runId: row.id, id: pageId } } });
      if (!page) throw new NotFound(`Wiki run ${id} has no page ${pageId}; GET /api/v0/wiki/${id} lists its pages`);
      const titles = await db.wikiPage.findMany({
        where: { runId: row.id, OR: [{ id: { in: page.linksOut } }, { linksOut: { has: pageId } }] },
        select: { id: true, title: true, path: true, linksOut: true },
      });
      const ref = (p: { id: string; title: string; path: string }) => ({ pageId: p.id, title: p.title, path: p.path });
      return {
        pageId: page.id,
        wikiRunId: row.id,
        title: page.title,
        path: page.path,
        parentId: page.parentId,
        order: page.position,
        markdown: page.markdown,
        sources: (page.sources as unknown as CitedSource[]).map((s) => ({ path: s.path, blobSha: s.blobSha || null, lines: s.lines })),
        linksOut: titles.filter((t) => page.linksOut.includes(t.id)).map(ref),
        linksIn: titles.filter((t) => t.linksOut.includes(pageId) && t.id !== pageId).map(ref),
        reused: page.reused,
        degraded: page.degraded,
      };
    },

    async search(caller: Principal | undefined, id: string, query: SearchQuery) {
      const row = await readableRun(id, caller, query.publicToken);
      return { wikiRunId: row.id, query: query.q, results: await searchRun(db, row.id, query.q, query.limit) };
    },

    /** The zip's writer, once access is checked; the route streams it. */
    async exportRun(caller: Principal | undefined, id: string, publicToken?: string) {
      const row = await readableRun(id, caller, publicToken);
      if (row.status !== 'succeeded') throw new Conflict(`Wiki run ${id} is ${row.status}; export it once it has succeeded`);
      const name = `${row.repoKey.split('/').pop() ?? 'wiki'}-${(row.commitHash ?? row.id).slice(0, 12)}.zip`;
      return { fileName: name.replace(/[^A-Za-z0-9._-]/g, '_'), write: (out: import('node:stream').Writable) => streamExport(db, row, out) };
    },

    /** A signed, expiring upload URL for the run's video; the video shows once its upload completes. */
    async videoUploadUrl(caller: Principal, body: VideoUploadBody) {
      const row = await readableRun(body.wikiRunId, caller);
      assertCanManage(row, caller);
      if (body.sizeBytes > deps.videoMaxBytes) {
        throw new BadRequest(`sizeBytes ${body.sizeBytes} is above the ${deps.videoMaxBytes}-byte limit of a video (AGENTPLANE_WIKI_VIDEO_MAX_BYTES)`, {
          metadata: { errors: [{ field: 'sizeBytes', message: 'too large' }] },
        });
      }
      const expiresAt = new Date(clock.now().getTime() + VIDEO_URL_TTL_MS);
      const { url, headers } = await deps.video.uploadUrl(row.id, body.contentType, body.sizeBytes, expiresAt);
      await db.wikiRun.update({ where: { id: row.id }, data: { videoContentType: body.contentType } });
      return { uploadUrl: url, method: 'PUT' as const, headers, expiresAt: expiresAt.getTime(), maxBytes: body.sizeBytes, storage: deps.video.kind };
    },

    /** Records a finished upload (data-directory storage calls it after the signed PUT). */
    async videoUploaded(runId: string) {
      const updated = await db.wikiRun.updateMany({ where: { id: runId }, data: { videoKey: runId } });
      // The run was deleted while its video uploaded: the file has no owner left.
      if (updated.count === 0) await deps.video.remove(runId);
    },
  };
}
export type WikiService = ReturnType<typeof createWikiService>;
